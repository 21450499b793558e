// Decoding strings off the wire: valid UTF-8 as TextDecoder decodes it, each byte of anything invalid as
// the lone surrogate U+DC00 + byte (issue 8, item 6), so that validation can tell it apart and refuse it.
import { expect } from "chai";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";
import { DescribeRequestSchema } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { checkResource } from "../../server/validation/validate.js";
import { decodeUtf8Escaped, installStrictUtf8 } from "../../server/wire/utf8.js";

const bytes = (...b: number[]) => new Uint8Array(b);
const decode = (...b: number[]) => decodeUtf8Escaped(bytes(...b));
/** The escape of each byte: U+DC00 + byte. */
const esc = (...b: number[]) => String.fromCharCode(...b.map((x) => 0xdc00 + x));
const reference = new TextDecoder("utf-8", { ignoreBOM: true });

describe("decodeUtf8Escaped", () => {
  it("decodes valid UTF-8 exactly as TextDecoder does", () => {
    const samples = ["", "orders", "a\u0000b\u007f", "é", "ß€", "\u07ff\u0800\uffff", "日本語のキー", "😀", "\u{10000}\u{10ffff}", "mixed: é€😀 end", "\ud7ff\ue000"];
    for (const s of samples) {
      const encoded = new TextEncoder().encode(s);
      expect(decodeUtf8Escaped(encoded), JSON.stringify(s)).to.equal(s);
      expect(decodeUtf8Escaped(encoded)).to.equal(reference.decode(encoded));
    }
  });

  it("decodes ASCII, 2-, 3- and 4-byte sequences", () => {
    expect(decode(0x61, 0x62, 0x63)).to.equal("abc");
    expect(decode(0xc3, 0xa9)).to.equal("é");
    expect(decode(0xe2, 0x82, 0xac)).to.equal("€");
    expect(decode(0xf0, 0x9f, 0x98, 0x80)).to.equal("😀");
    expect(decode(0xf4, 0x8f, 0xbf, 0xbf)).to.equal("\u{10ffff}");
  });

  it("keeps a leading byte order mark, which would otherwise make two names one", () => {
    expect(decode(0xef, 0xbb, 0xbf, 0x78)).to.equal("\ufeffx");
  });

  it("escapes bytes that never start a sequence: continuation bytes, C0, C1, F5..FF", () => {
    expect(decode(0xff)).to.equal(esc(0xff));
    expect(decode(0xfe)).to.equal(esc(0xfe));
    expect(decode(0xff)).to.not.equal(decode(0xfe));
    expect(decode(0x80)).to.equal(esc(0x80));
    expect(decode(0xbf, 0x61)).to.equal(esc(0xbf) + "a");
    expect(decode(0xc0)).to.equal(esc(0xc0));
    expect(decode(0xc1, 0xbf)).to.equal(esc(0xc1, 0xbf));
    expect(decode(0xf5, 0x80, 0x80, 0x80)).to.equal(esc(0xf5, 0x80, 0x80, 0x80));
    expect(decode(0x61, 0xff, 0x62)).to.equal("a" + esc(0xff) + "b");
  });

  it("escapes a sequence cut short, by the end of the input or by another character", () => {
    expect(decode(0xc3)).to.equal(esc(0xc3));
    expect(decode(0xe2, 0x82)).to.equal(esc(0xe2, 0x82));
    expect(decode(0xf0, 0x9f, 0x98)).to.equal(esc(0xf0, 0x9f, 0x98));
    expect(decode(0xe2, 0x82, 0x41)).to.equal(esc(0xe2, 0x82) + "A");
    expect(decode(0xc3, 0xc3, 0xa9)).to.equal(esc(0xc3) + "é");
    expect(decode(0xf0, 0x9f, 0xf0, 0x9f, 0x98, 0x80)).to.equal(esc(0xf0, 0x9f) + "😀");
  });

  it("escapes overlong encodings", () => {
    expect(decode(0xc0, 0xaf)).to.equal(esc(0xc0, 0xaf)); // "/" in 2 bytes
    expect(decode(0xc1, 0x81)).to.equal(esc(0xc1, 0x81)); // "A" in 2 bytes
    expect(decode(0xe0, 0x80, 0xaf)).to.equal(esc(0xe0, 0x80, 0xaf)); // "/" in 3 bytes
    expect(decode(0xe0, 0x9f, 0xbf)).to.equal(esc(0xe0, 0x9f, 0xbf)); // U+07FF in 3 bytes
    expect(decode(0xf0, 0x80, 0x80, 0xaf)).to.equal(esc(0xf0, 0x80, 0x80, 0xaf)); // "/" in 4 bytes
    expect(decode(0xf0, 0x8f, 0xbf, 0xbf)).to.equal(esc(0xf0, 0x8f, 0xbf, 0xbf)); // U+FFFF in 4 bytes
  });

  it("escapes code points above U+10FFFF", () => {
    expect(decode(0xf4, 0x90, 0x80, 0x80)).to.equal(esc(0xf4, 0x90, 0x80, 0x80));
  });

  it("escapes surrogate code points encoded in UTF-8 (CESU-8, WTF-8)", () => {
    expect(decode(0xed, 0xa0, 0x80)).to.equal(esc(0xed, 0xa0, 0x80)); // U+D800
    expect(decode(0xed, 0xbf, 0xbf)).to.equal(esc(0xed, 0xbf, 0xbf)); // U+DFFF
    // A surrogate pair, each half on its own: not 😀.
    expect(decode(0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80)).to.equal(esc(0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80));
    expect(decode(0xed, 0x9f, 0xbf)).to.equal("\ud7ff"); // the last code point before them is fine
  });

  it("keeps valid text around invalid bytes, and decodes long input with many of them", () => {
    expect(decode(0xc3, 0xa9, 0xff, 0xe2, 0x82, 0xac)).to.equal("é" + esc(0xff) + "€");
    const long = new Uint8Array(20_000).map((_, i) => (i % 2 ? 0x61 : 0xff));
    const out = decodeUtf8Escaped(long);
    expect(out.length).to.equal(20_000);
    expect(out.slice(0, 4)).to.equal(esc(0xff) + "a" + esc(0xff) + "a");
  });

  it("gives every different input a different string: no two byte strings decode alike", () => {
    const seen = new Map<string, string>();
    for (let a = 0; a < 256; a++) {
      for (const b of [0x00, 0x41, 0x80, 0xa9, 0xbf, 0xc3, 0xff]) {
        const s = decode(a, b);
        const key = `${a},${b}`;
        expect(seen.get(s), `${key} decodes like ${seen.get(s)}`).to.equal(undefined);
        seen.set(s, key);
      }
    }
  });

  it("makes validation refuse invalid UTF-8, naming the field", () => {
    expect(() => checkResource(decode(0xff))).to.throw(/resource is not valid UTF-8/);
    expect(() => checkResource(decode(0x6f, 0x72, 0x64, 0xc3))).to.throw(/resource is not valid UTF-8/);
    expect(() => checkResource(decode(0xc3, 0xa9, 0xe2, 0x82, 0xac))).not.to.throw();
  });
});

describe("installStrictUtf8", () => {
  const before = getTextEncoding();
  // The setting is global: put back what the rest of this test process expects.
  after(() => configureTextEncoding(before));

  it("makes protobuf-es decode string fields with it, and leaves encoding as it was", () => {
    const wire = bytes(0x0a, 0x01, 0xff); // DescribeRequest { resource: "\xff" }
    expect(fromBinary(DescribeRequestSchema, wire).resource).to.equal("\ufffd");
    installStrictUtf8();
    expect(fromBinary(DescribeRequestSchema, wire).resource).to.equal(esc(0xff));
    expect(fromBinary(DescribeRequestSchema, bytes(0x0a, 0x01, 0xfe)).resource).to.equal(esc(0xfe));
    const encoded = toBinary(DescribeRequestSchema, create(DescribeRequestSchema, { resource: "é😀" }));
    expect(fromBinary(DescribeRequestSchema, encoded).resource).to.equal("é😀");
    expect(getTextEncoding().encodeUtf8).to.equal(before.encodeUtf8);
    expect(getTextEncoding().checkUtf8).to.equal(before.checkUtf8);
  });
});
