// Tables printed row by row as they are measured, and the number formats they use.

export interface Column {
  title: string;
  width: number;
  /** Left-aligned; numbers are right-aligned by default. */
  left?: boolean;
}

export class Table {
  readonly #columns: Column[];

  /** Prints the title and the header at once. */
  constructor(title: string, columns: Column[]) {
    this.#columns = columns.map((c) => ({ ...c, width: Math.max(c.width, c.title.length) }));
    console.log(`\n${title}\n`);
    console.log(this.#line(this.#columns.map((c) => c.title)));
  }

  row(cells: string[]): void {
    console.log(this.#line(cells));
  }

  note(text: string): void {
    console.log(`  ${text}`);
  }

  #line(cells: string[]): string {
    return this.#columns
      .map((c, i) => (c.left ? (cells[i] ?? "").padEnd(c.width) : (cells[i] ?? "").padStart(c.width)))
      .join("  ")
      .trimEnd();
  }
}

export const num = (x: number, digits = 0) => (Number.isFinite(x) ? x.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits }) : "-");
export const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : "-");
export const ratio = (x: number) => (Number.isFinite(x) ? `${x.toFixed(2)}x` : "-");
export const pct = (x: number) => (Number.isFinite(x) ? `${(x * 100).toFixed(0)}%` : "-");
export const mb = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : "-");
