// Names as people read them, in a terminal (the fencekeeper command) and on the console's page: a
// character that changes how the text around it is shown, or that cannot be seen, is replaced by its
// escape, such as \u202E. That covers the bidi controls (U+202E reverses what follows it, so that
// "invoice\u202Efdp.exe" reads as "invoiceexe.pdf"), U+2028 and U+2029 (they break a line), the other
// format characters (zero-width ones, which make two names look alike) and control characters other
// than tab and newline. Resource names and holder labels may hold all of these but control characters,
// and a principal is whatever its credential says, so every name shown to a person goes through here.
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}]/gu;

/** \u202E for U+202E; \u{E0041} past U+FFFF. */
export function escapeOf(ch: string): string {
  const code = ch.codePointAt(0)!;
  const hex = code.toString(16).toUpperCase();
  return code > 0xffff ? `\\u{${hex}}` : `\\u${hex.padStart(4, "0")}`;
}

/** The text with each hidden character replaced by its escape. */
export function visibleText(text: string): string {
  return text.replace(HIDDEN, escapeOf);
}

/** The text in runs: plain ones as they are, and each hidden character as its escape (for a page to mark). */
export function visibleParts(text: string): { text: string; escaped: boolean }[] {
  const parts: { text: string; escaped: boolean }[] = [];
  let at = 0;
  for (const m of text.matchAll(HIDDEN)) {
    if (m.index! > at) parts.push({ text: text.slice(at, m.index), escaped: false });
    parts.push({ text: escapeOf(m[0]), escaped: true });
    at = m.index! + m[0].length;
  }
  if (at < text.length) parts.push({ text: text.slice(at), escaped: false });
  return parts;
}
