package dev.airlock.it;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Tuple;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Set;

/**
 * Generators of what a hostile or confused client sends as a JSON body: every JSON type in every
 * field, numbers no Java type holds, strings with control characters and lone surrogates, deep
 * nesting, unknown fields, and bytes that are not JSON or not UTF-8 at all. Values are JSON text,
 * so they can be what a JSON library would never write.
 */
final class HostileJson {

    private HostileJson() {
    }

    /** Any JSON value, nested a few levels. */
    static Arbitrary<String> values() {
        return Arbitraries.lazyOf(
                HostileJson::scalars, HostileJson::scalars, HostileJson::scalars,
                () -> values().list().ofMaxSize(4).map(items -> "[" + String.join(",", items) + "]"),
                () -> Combinators.combine(keys(), values()).as((k, v) -> k + ":" + v).list().ofMaxSize(4)
                        .map(entries -> "{" + String.join(",", entries) + "}"));
    }

    static Arbitrary<String> scalars() {
        return Arbitraries.oneOf(
                Arbitraries.just("null"), Arbitraries.of("true", "false"),
                Arbitraries.integers().map(String::valueOf),
                Arbitraries.longs().map(String::valueOf),
                Arbitraries.of("0", "-0", "1e400", "-1e400", "1e-400", "123456789012345678901234567890", "-9223372036854775809",
                        "9223372036854775808", "4.9e-324", "1.7976931348623157e308", "0.5", "86400", "86401", "2147483648", "1e9"),
                Arbitraries.doubles().map(String::valueOf).filter(s -> !s.contains("Infinity") && !s.contains("NaN")),
                strings().map(HostileJson::quote));
    }

    /** Text a field might get: sizes, paths, names, control characters, lone surrogates, long runs. */
    static Arbitrary<String> strings() {
        return Arbitraries.oneOf(
                Arbitraries.strings().all().ofMaxLength(40),
                Arbitraries.strings().withCharRange('\u0000', '\u001f').ofMaxLength(8),
                Arbitraries.strings().withCharRange('\ud800', '\udfff').ofMaxLength(4),
                Arbitraries.of("", "256m", "1g", "-1", "0", "99999999999999999999g", "1x", "python", "sh", "/", "/workspace", "..", "../../etc",
                        "/proc/self/mem", "al-00000000-0000000000000000", "*", "%00", "\u2028", "default", "system"),
                Arbitraries.integers().between(1, 200_000).map("a"::repeat));
    }

    private static Arbitrary<String> keys() {
        return strings().map(HostileJson::quote);
    }

    /**
     * A JSON object whose fields are some of {@code fields} (and now and then one that is not),
     * each with any value.
     */
    static Arbitrary<String> objectsWith(Set<String> fields) {
        Arbitrary<String> name = Arbitraries.frequencyOf(
                Tuple.of(9, Arbitraries.of(new ArrayList<>(fields))),
                Tuple.of(1, strings()));
        return Combinators.combine(name, values()).as((k, v) -> quote(k) + ":" + v).list().ofMaxSize(fields.size() + 1)
                .map(entries -> "{" + String.join(",", entries) + "}");
    }

    /** Bodies that are not a JSON object, or not JSON, or not text. */
    static Arbitrary<byte[]> malformedBodies() {
        return Arbitraries.oneOf(
                values().map(HostileJson::utf8),
                Arbitraries.bytes().array(byte[].class).ofMaxSize(64),
                Arbitraries.integers().between(1, 5000).map(depth -> utf8("[".repeat(depth) + "]".repeat(depth))),
                Arbitraries.integers().between(1, 5000).map(depth -> utf8("{\"a\":".repeat(depth) + "1" + "}".repeat(depth))),
                Arbitraries.of(invalidUtf8(), utf8("{"), utf8("{\"a\":1}{"), utf8("{\"a\":1,}"), utf8("{'a':1}"), utf8("{\"a\":01}"),
                        utf8("{\"a\":NaN}"), utf8("{\"a\":\"\\ud800\"}"), utf8("{\"a\":\"\\u00\"}"), utf8("\u0000"), utf8("{\"a\":1,\"a\":2}")));
    }

    /** An object whose string value holds bytes that are not UTF-8 (a lone continuation byte, an overlong encoding). */
    static byte[] invalidUtf8() {
        byte[] head = utf8("{\"command\":[\"");
        byte[] bad = {(byte) 0x80, (byte) 0xc0, (byte) 0xaf, (byte) 0xff, (byte) 0xed, (byte) 0xa0, (byte) 0x80};
        byte[] tail = utf8("\"]}");
        byte[] all = new byte[head.length + bad.length + tail.length];
        System.arraycopy(head, 0, all, 0, head.length);
        System.arraycopy(bad, 0, all, head.length, bad.length);
        System.arraycopy(tail, 0, all, head.length + bad.length, tail.length);
        return all;
    }

    /** {@code s} as a JSON string literal, every character outside printable ASCII escaped (lone surrogates too). */
    static String quote(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

}
