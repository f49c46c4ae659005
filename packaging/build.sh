#!/usr/bin/env bash
# Builds Airlock for installing (docs/install.md), from this checkout:
#   target/airlock_<version>_amd64.deb           the Debian package: /usr/lib/airlock (a Java runtime
#                                                 trimmed with jlink, the jars), /usr/bin/airlock, the
#                                                 systemd unit, /etc/airlock
#   target/airlock-<version>-linux-amd64.tar.gz   the same runtime and jars with bin/airlock, runnable
#                                                 from any directory
# Reproducible: the same commit gives byte-identical files. Every time in them is the commit's
# (SOURCE_DATE_EPOCH), archives list their entries sorted, owned by root, and the jars' entries carry
# Maven's project.build.outputTimestamp. Run as `bin/airlock package`, or `mvn -Ppackage package -DskipTests`.
set -euo pipefail
self=$(readlink -f "$0")
source "${self%/packaging/*}/bin/common.sh"
airlock_find_java
airlock_ensure_packages dpkg-deb:dpkg gzip:gzip strip:binutils
# from Maven (mvn -Ppackage package) the build that runs this made the jars; from bin/airlock, build when stale
[ -n "${AIRLOCK_PACKAGE_BUILT:-}" ] || airlock_build_if_stale

cd "$AIRLOCK_HOME"
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
# the project's version, and the commit's day and id (a Debian version sorts ~ before anything)
pom_version=$(sed -n '0,/<version>/s:.*<version>\(.*\)</version>.*:\1:p' pom.xml)
day=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d)
version="${pom_version%-SNAPSHOT}"
[ "$version" != "$pom_version" ] && version="$version~git$day.${commit:0:7}"
out="$AIRLOCK_HOME/target"
work="$out/package"
rm -rf "$work"
mkdir -p "$work"
echo "airlock: packaging $version (commit $commit) ..." >&2

# --- the installed tree, the same for the package and the tarball ---
tree="$work/airlock"
mkdir -p "$tree/bin" "$tree/lib"
cp airlock-cli/target/airlock-cli.jar "$tree/"
cp airlock-cli/target/lib/*.jar "$tree/lib/"
install -m 0755 packaging/launcher.sh "$tree/bin/airlock"
install -m 0644 bin/aot.sh "$tree/bin/aot.sh"
# the Java modules the jars use (jdeps), and the few they reach only by name
modules=$("$JAVA_HOME/bin/jdeps" --ignore-missing-deps --print-module-deps --multi-release 25 \
  --class-path "$tree/lib/*" "$tree/airlock-cli.jar")
modules="$modules,jdk.crypto.ec,jdk.zipfs,jdk.charsets"
"$JAVA_HOME/bin/jlink" --add-modules "$modules" --strip-debug --no-man-pages --no-header-files \
  --strip-native-debug-symbols exclude-debuginfo-files --compress=zip-9 --output "$tree/runtime"
# the runtime's programs and libraries without their symbol tables, as Debian ships binaries
find "$tree/runtime" -type f \( -name '*.so' -o -path '*/bin/*' -o -name jexec -o -name jspawnhelper \) \
  -exec strip --strip-unneeded --remove-section=.comment --remove-section=.note {} +
echo "$modules" | tr ',' '\n' | sort > "$work/modules.txt"

# --- the Debian package ---
root="$work/deb"
mkdir -p "$root/DEBIAN" "$root/usr/lib" "$root/usr/bin" "$root/lib/systemd/system" "$root/etc/airlock" \
  "$root/usr/share/doc/airlock" "$root/usr/share/lintian/overrides"
cp -a "$tree" "$root/usr/lib/airlock"
ln -s ../lib/airlock/bin/airlock "$root/usr/bin/airlock"
install -m 0644 packaging/airlock.service "$root/lib/systemd/system/airlock.service"
install -m 0644 packaging/airlock.env "$root/etc/airlock/airlock.env"
install -m 0644 packaging/policy.yaml.example "$root/etc/airlock/policy.yaml.example"
install -m 0644 README.md "$root/usr/share/doc/airlock/README.md"
for doc in docs/*.md; do install -m 0644 "$doc" "$root/usr/share/doc/airlock/"; done
packaging/copyright.sh "$tree" > "$root/usr/share/doc/airlock/copyright"
install -m 0644 packaging/deb/lintian-overrides "$root/usr/share/lintian/overrides/airlock"
printf 'airlock (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- %s  %s\n' \
  "$version" "$commit" "$(sed -n 's/^Maintainer: //p' packaging/deb/control)" "$(date -u -R -d "@$SOURCE_DATE_EPOCH")" \
  | gzip -9n > "$root/usr/share/doc/airlock/changelog.gz"
for script in postinst prerm postrm; do install -m 0755 "packaging/deb/$script" "$root/DEBIAN/$script"; done
printf '/etc/airlock/airlock.env\n/etc/airlock/policy.yaml.example\n' > "$root/DEBIAN/conffiles"
size=$(du -k -s --apparent-size "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@SIZE@/$size/" packaging/deb/control > "$root/DEBIAN/control"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
normalize() {
  find "$1" -type d -exec chmod 0755 {} +
  find "$1" -type f -perm /0111 -exec chmod 0755 {} +
  find "$1" -type f ! -perm /0111 -exec chmod 0644 {} +
  find "$1" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
}
normalize "$root"
deb="$out/airlock_${version}_amd64.deb"
dpkg-deb --root-owner-group -Zgzip -z9 --build "$root" "$deb" >/dev/null

# --- the tarball ---
name="airlock-$version"
mkdir -p "$work/tar"
cp -a "$tree" "$work/tar/$name"
install -m 0644 README.md "$work/tar/$name/README.md"
normalize "$work/tar"
tarball="$out/airlock-$version-linux-amd64.tar.gz"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" -C "$work/tar" -cf - "$name" | gzip -9n > "$tarball"

for f in "$deb" "$tarball"; do
  echo "$(sha256sum "$f" | cut -d' ' -f1)  $(du -h "$f" | cut -f1)  $f"
done
