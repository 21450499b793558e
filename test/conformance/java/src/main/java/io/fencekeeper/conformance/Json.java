package io.fencekeeper.conformance;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Just enough JSON for the single calls: the token and key files that verify reads, and the lines every
 * call prints. Objects are Maps, arrays Lists, numbers Doubles. The client has no JSON library of its own.
 */
final class Json {
  private final String s;
  private int at;

  private Json(String s) {
    this.s = s;
  }

  static Object parse(String text) {
    Json p = new Json(text);
    Object value = p.value();
    p.space();
    if (p.at != text.length()) throw p.error("text after the value");
    return value;
  }

  private IllegalArgumentException error(String what) {
    return new IllegalArgumentException("invalid JSON at offset " + at + ": " + what);
  }

  private void space() {
    while (at < s.length() && Character.isWhitespace(s.charAt(at))) at++;
  }

  private boolean take(char c) {
    space();
    if (at < s.length() && s.charAt(at) == c) {
      at++;
      return true;
    }
    return false;
  }

  private void expect(char c) {
    if (!take(c)) throw error("expected '" + c + "'");
  }

  private Object value() {
    space();
    if (at >= s.length()) throw error("unexpected end");
    char c = s.charAt(at);
    if (c == '{') {
      at++;
      Map<String, Object> object = new LinkedHashMap<>();
      if (take('}')) return object;
      do {
        space();
        String key = string();
        expect(':');
        object.put(key, value());
      } while (take(','));
      expect('}');
      return object;
    }
    if (c == '[') {
      at++;
      List<Object> array = new ArrayList<>();
      if (take(']')) return array;
      do array.add(value()); while (take(','));
      expect(']');
      return array;
    }
    if (c == '"') return string();
    for (String word : new String[] {"true", "false", "null"}) {
      if (s.startsWith(word, at)) {
        at += word.length();
        return word.equals("null") ? null : Boolean.valueOf(word);
      }
    }
    int start = at;
    while (at < s.length() && "+-0123456789.eE".indexOf(s.charAt(at)) >= 0) at++;
    if (start == at) throw error("unexpected '" + c + "'");
    return Double.valueOf(s.substring(start, at));
  }

  private String string() {
    if (at >= s.length() || s.charAt(at) != '"') throw error("expected a string");
    StringBuilder out = new StringBuilder();
    for (at++; ; at++) {
      if (at >= s.length()) throw error("unterminated string");
      char c = s.charAt(at);
      if (c == '"') {
        at++;
        return out.toString();
      }
      if (c != '\\') {
        out.append(c);
        continue;
      }
      char e = s.charAt(++at);
      switch (e) {
        case 'b' -> out.append('\b');
        case 'f' -> out.append('\f');
        case 'n' -> out.append('\n');
        case 'r' -> out.append('\r');
        case 't' -> out.append('\t');
        case 'u' -> {
          out.append((char) Integer.parseInt(s.substring(at + 1, at + 5), 16));
          at += 4;
        }
        default -> out.append(e);
      }
    }
  }

  /** JSON text of Maps, Lists, Booleans, Numbers and Strings (anything else as its string). */
  static String write(Object value) {
    if (value instanceof Map<?, ?> map) {
      StringBuilder json = new StringBuilder("{");
      for (Map.Entry<?, ?> field : map.entrySet()) {
        if (json.length() > 1) json.append(',');
        json.append(quote(field.getKey().toString())).append(':').append(write(field.getValue()));
      }
      return json.append('}').toString();
    }
    if (value instanceof List<?> list) {
      StringBuilder json = new StringBuilder("[");
      for (Object item : list) {
        if (json.length() > 1) json.append(',');
        json.append(write(item));
      }
      return json.append(']').toString();
    }
    if (value instanceof Boolean || value instanceof Number) return value.toString();
    return value == null ? "null" : quote(value.toString());
  }

  private static String quote(String s) {
    StringBuilder q = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') q.append('\\').append(c);
      else if (c < 0x20) q.append(String.format("\\u%04x", (int) c));
      else q.append(c);
    }
    return q.append('"').toString();
  }
}
