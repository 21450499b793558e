// Strings off the wire keep the trace of invalid UTF-8, so that it can be refused.
//
// protobuf-es decodes string fields with a non-fatal TextDecoder, which turns every invalid byte into
// U+FFFD: the bytes \xff and \xfe both arrived as "\ufffd" and named the same resource. Decoded here
// instead, each byte of an invalid sequence becomes the lone surrogate U+DC80..U+DCFF (U+DC00 + the byte,
// as Python's "surrogateescape" does). No valid UTF-8 decodes to a lone surrogate, so nothing valid
// changes, two different inputs never meet, and server/validation/validate.ts refuses the result with
// INVALID_ARGUMENT, naming the field.
import type { JsonReadOptions, JsonWriteOptions } from "@bufbuild/protobuf";
import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";

// ignoreBOM: a leading U+FEFF is kept, as every other character is. A decoder that dropped it would make
// "\ufeffx" and "x" the same name, the fault this module exists to prevent.
const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Lone surrogates stand for the bytes 0x80..0xFF of invalid sequences. */
const ESCAPE_BASE = 0xdc00;

/**
 * Decodes UTF-8 as TextDecoder does (keeping a leading BOM), except that each byte of an invalid,
 * truncated or overlong sequence, or of an encoded surrogate, becomes U+DC00 + the byte.
 */
export function decodeUtf8Escaped(bytes: Uint8Array): string {
  try {
    return strict.decode(bytes);
  } catch {
    return decodeSlowly(bytes);
  }
}

/** The length of the valid UTF-8 sequence at bytes[i], or 0 if there is none there (RFC 3629). */
function sequenceLength(bytes: Uint8Array, i: number): number {
  const b = bytes[i];
  const cont = (j: number, lo = 0x80, hi = 0xbf) => i + j < bytes.length && bytes[i + j] >= lo && bytes[i + j] <= hi;
  if (b < 0x80) return 1;
  if (b >= 0xc2 && b <= 0xdf) return cont(1) ? 2 : 0;
  if (b >= 0xe0 && b <= 0xef) {
    // E0: no overlong forms (A0..BF); ED: no surrogates U+D800..U+DFFF (80..9F).
    const second = b === 0xe0 ? cont(1, 0xa0) : b === 0xed ? cont(1, 0x80, 0x9f) : cont(1);
    return second && cont(2) ? 3 : 0;
  }
  if (b >= 0xf0 && b <= 0xf4) {
    // F0: no overlong forms (90..BF); F4: nothing above U+10FFFF (80..8F).
    const second = b === 0xf0 ? cont(1, 0x90) : b === 0xf4 ? cont(1, 0x80, 0x8f) : cont(1);
    return second && cont(2) && cont(3) ? 4 : 0;
  }
  return 0; // a continuation byte where a sequence should start, C0, C1, F5..FF
}

function decodeSlowly(bytes: Uint8Array): string {
  const parts: string[] = [];
  let units: number[] = [];
  const push = (...u: number[]) => {
    units.push(...u);
    if (units.length >= 4096) {
      parts.push(String.fromCharCode(...units));
      units = [];
    }
  };
  for (let i = 0; i < bytes.length; ) {
    const n = sequenceLength(bytes, i);
    const b = bytes[i];
    if (n === 0) {
      // Escaping one byte and going on from the next gives what escaping the whole invalid subpart
      // would: its other bytes are continuation bytes, which never start a valid sequence.
      push(ESCAPE_BASE + b);
      i += 1;
      continue;
    }
    let cp = n === 1 ? b : b & (0xff >> (n + 1));
    for (let j = 1; j < n; j++) cp = (cp << 6) | (bytes[i + j] & 0x3f);
    if (cp > 0xffff) push(0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff));
    else push(cp);
    i += n;
  }
  parts.push(String.fromCharCode(...units));
  return parts.join("");
}

/**
 * Makes protobuf-es decode every string field with decodeUtf8Escaped, for the whole process (the setting
 * is global). Encoding and checkUtf8 stay as they were.
 */
export function installStrictUtf8(): void {
  const { encodeUtf8, checkUtf8 } = getTextEncoding();
  configureTextEncoding({ encodeUtf8, checkUtf8, decodeUtf8: decodeUtf8Escaped });
}

/**
 * For connectNodeAdapter's jsonOptions: Connect's JSON codec decodes request bodies with a TextDecoder of
 * its own, not protobuf-es's, so invalid UTF-8 in JSON needs this too (protobuf-es then refuses the lone
 * surrogates: "cannot decode field ....resource from JSON: ... invalid UTF8", INVALID_ARGUMENT). Connect
 * passes jsonOptions on to createJsonSerialization, which takes a textDecoder, though the adapter's type
 * does not list it; test/integration/utf8.test.ts checks that it is used.
 */
export const strictUtf8Json: Partial<JsonReadOptions & JsonWriteOptions> & { textDecoder: { decode(input?: Uint8Array): string } } = {
  textDecoder: { decode: (input) => decodeUtf8Escaped(input ?? new Uint8Array()) },
};
