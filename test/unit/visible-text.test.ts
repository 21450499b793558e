// Names as people read them (cli/visible-text.ts, used by the fencekeeper command and the console's
// page): every character that changes or hides how a name reads is shown as its escape, and nothing else.
import { expect } from "chai";
import { visibleParts, visibleText } from "../../cli/visible-text.js";

describe("visibleText", () => {
  it("escapes the bidi controls, U+2028 and U+2029, zero-width characters and control characters", () => {
    const hidden = ["\u061c", "\u200b", "\u200d", "\u200e", "\u200f", "\u2028", "\u2029", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2060", "\u2066", "\u2067", "\u2068", "\u2069", "\ufeff", "\u0000", "\u001b", "\u007f", "\u0085", "\u{e0041}"];
    for (const ch of hidden) {
      const shown = visibleText(`a${ch}b`);
      const code = ch.codePointAt(0)!.toString(16).toUpperCase();
      expect(shown, `U+${code}`).to.equal(ch.codePointAt(0)! > 0xffff ? `a\\u{${code}}b` : `a\\u${code.padStart(4, "0")}b`);
    }
  });

  it("leaves every other character as it is: letters of any script, emoji, tab and newline", () => {
    for (const s of ["orders/eu-1", "日本語のキー", "שלום", "مرحبا", "😀", "é", "a\tb", "line one\nline two", "a\\u202Eb", ""]) {
      expect(visibleText(s), JSON.stringify(s)).to.equal(s);
    }
  });

  it("splits a name into plain runs and marked escapes, in order", () => {
    expect(visibleParts("invoice\u202efdp.exe\u2028\u2029")).to.deep.equal([
      { text: "invoice", escaped: false },
      { text: "\\u202E", escaped: true },
      { text: "fdp.exe", escaped: false },
      { text: "\\u2028", escaped: true },
      { text: "\\u2029", escaped: true },
    ]);
    expect(visibleParts("plain")).to.deep.equal([{ text: "plain", escaped: false }]);
    expect(visibleParts("")).to.deep.equal([]);
  });
});
