// buf curl, the client of the Buf CLI (npm package @bufbuild/buf), as an outside tool that knows
// nothing of fencekeeper's protos and learns them through server reflection.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

const BUF = fileURLToPath(new URL("../../../node_modules/.bin/buf", import.meta.url));

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export function bufCurl(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(BUF, ["curl", ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}
