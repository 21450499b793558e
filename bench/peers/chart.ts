// The peers benchmark's chart, as plain SVG: acquire + release cycles per second of each system at each
// level of lockers (medians over the rounds), bars on a log scale, and beside them the handover p50 and
// p99. No library: rects, lines and text.
import type { Results } from "./main.js";

const COLORS = ["#1f5fa8", "#5b9bd5", "#8fb9e3", "#b8d3ee", "#c0392b", "#e67e73", "#2e7d32", "#66bb6a", "#a5d6a7", "#7f7f7f"];

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/`/g, "");
const median = (xs: number[]) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

export function chart(r: Results): string {
  const systems = r.systems.filter((s) => r.cycles.some((c) => c.system === s.id));
  const levels = r.flags.levels;
  const value = (id: string, l: number) => median(r.cycles.filter((c) => c.system === id && c.lockers === l).map((c) => c.perSecond));
  const values = systems.flatMap((s) => levels.map((l) => value(s.id, l))).filter((x) => Number.isFinite(x) && x > 0);
  const top = Math.pow(10, Math.ceil(Math.log10(Math.max(10, ...values))));
  const bottom = Math.pow(10, Math.floor(Math.log10(Math.max(1, Math.min(...values, top) / 1.5))));

  const left = 70;
  const plotTop = 50;
  const plotH = 300;
  const bar = 14;
  const groupW = systems.length * bar + 30;
  const plotW = Math.max(levels.length * groupW, 300);
  const legendTop = plotTop + plotH + 50;
  const width = Math.max(left + plotW + 40, 800);
  const height = legendTop + systems.length * 18 + 60;
  const y = (v: number) => plotTop + plotH - ((Math.log10(v) - Math.log10(bottom)) / (Math.log10(top) - Math.log10(bottom))) * plotH;
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`);
  parts.push(`<rect width="${width}" height="${height}" fill="white"/>`);
  parts.push(
    `<text x="${left}" y="20" font-size="14" font-weight="bold">Acquire + release cycles per second (log scale; medians of ${r.flags.rounds} round(s))</text>`,
    `<text x="${left}" y="36" fill="#555">each locker on a resource of its own; ${esc(r.date.slice(0, 16))} UTC, ${r.machine.cores} cores shared with other jobs: read the ratios, not the absolutes</text>`,
  );
  for (let v = bottom; v <= top; v *= 10) {
    parts.push(`<line x1="${left}" x2="${left + plotW}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    parts.push(`<text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${v.toLocaleString("en-US")}</text>`);
  }
  levels.forEach((l, g) => {
    const x0 = left + g * groupW + 15;
    systems.forEach((s, i) => {
      const v = value(s.id, l);
      if (!Number.isFinite(v) || v <= 0) return;
      const yy = y(Math.max(v, bottom));
      parts.push(`<rect x="${x0 + i * bar}" y="${yy}" width="${bar - 2}" height="${plotTop + plotH - yy}" fill="${COLORS[i % COLORS.length]}"><title>${esc(s.label)}, ${l} locker(s): ${Math.round(v)} cycles/s</title></rect>`);
    });
    parts.push(`<text x="${x0 + (systems.length * bar) / 2}" y="${plotTop + plotH + 18}" text-anchor="middle">${l} locker${l === 1 ? "" : "s"}</text>`);
  });
  parts.push(`<line x1="${left}" x2="${left + plotW}" y1="${plotTop + plotH}" y2="${plotTop + plotH}" stroke="#333"/>`);
  systems.forEach((s, i) => {
    const yy = legendTop + i * 18;
    const h = r.handover.filter((x) => x.system === s.id);
    const hand = h.length ? `; handover p50 ${median(h.map((x) => x.p50Ms)).toFixed(2)} ms, p99 ${median(h.map((x) => x.p99Ms)).toFixed(1)} ms` : "";
    parts.push(`<rect x="${left}" y="${yy - 10}" width="12" height="12" fill="${COLORS[i % COLORS.length]}"/>`);
    parts.push(`<text x="${left + 18}" y="${yy}">${esc(s.label)}${esc(hand)}</text>`);
  });
  parts.push(`</svg>`);
  return parts.join("\n") + "\n";
}
