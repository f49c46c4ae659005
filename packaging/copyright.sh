#!/usr/bin/env bash
# Prints the Debian copyright file of Airlock's package for the installed tree TREE (packaging/build.sh):
# Airlock's own files, the Java runtime's (its notices are in runtime/legal), and each bundled jar's
# license as the jar itself declares it (its manifest's Bundle-License, or the license files it carries).
set -euo pipefail
tree=$1
cat <<'HEAD'
Airlock, as packaged here, is Airlock's own code (the jars airlock-*.jar and airlock-cli.jar, and
bin/airlock) with a Java runtime made by jlink from the JDK it was built with, and the libraries
below, each under its own license.

Airlock's own code: Copyright 2026 the Airlock authors. No license has been chosen for it yet: it
is distributed here for evaluation, with no rights granted beyond using this package.

The Java runtime (/usr/lib/airlock/runtime): OpenJDK, Copyright Oracle and/or its affiliates and
others, GNU General Public License version 2 with the Classpath Exception; the notices of each of
its modules are under /usr/lib/airlock/runtime/legal. On Debian systems the complete text of the
GNU General Public License version 2 is in /usr/share/common-licenses/GPL-2.

The bundled libraries (/usr/lib/airlock/lib), and the license each declares:
HEAD
for jar in "$tree"/lib/*.jar; do
  name=${jar##*/}
  case "$name" in airlock-*) continue ;; esac
  license=$(unzip -p "$jar" META-INF/MANIFEST.MF 2>/dev/null | tr -d '\r' | sed -n '/^Bundle-License:/,/^[^ ]/p' \
    | sed -e 's/^Bundle-License: //' -e 's/^ //' | grep -v '^[A-Z][A-Za-z-]*:' | tr -d '\n' || true)
  if [ -z "$license" ]; then
    files=$(unzip -Z1 "$jar" 2>/dev/null | grep -iE '^(META-INF/)?(LICENSE|NOTICE|COPYING)[^/]*$' | tr '\n' ' ' || true)
    license=${files:+see $files in the jar}
  fi
  printf ' %s: %s\n' "$name" "${license:-no license declared in the jar; see its project}"
done
# compiled into airlock-cli.jar from its published source (airlock-cli/pom.xml), so in no jar of its own
echo " picocli (in airlock-cli.jar, compiled from its source): Copyright 2017 Remko Popma, Apache License 2.0 (as its source"
echo " says); on Debian systems the complete text of the Apache License 2.0 is in /usr/share/common-licenses/Apache-2.0."
