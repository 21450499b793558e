// Mocha's spec reporter, which also records how long each test took: with FK_TEST_TIMINGS set to a file,
// one JSON line per test ({ file, test, ms, state }) is appended to it at the end of the run. Works in
// parallel mode too, where the tests' events come from the workers. scripts/test.sh uses the file to
// start the longest files first and .ci/run to print the slowest tests. CommonJS, as mocha loads
// reporters with require().
"use strict";
const { appendFileSync } = require("node:fs");
const { relative } = require("node:path");
const Mocha = require("mocha");

class SpecWithTimings extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const out = process.env.FK_TEST_TIMINGS;
    if (!out) return;
    const rows = [];
    runner.on(Mocha.Runner.constants.EVENT_TEST_END, (test) => {
      rows.push({
        file: test.file ? relative(process.cwd(), test.file) : undefined,
        test: typeof test.fullTitle === "function" ? test.fullTitle() : test.title,
        ms: test.duration ?? 0,
        state: test.state ?? "pending",
      });
    });
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      if (rows.length) appendFileSync(out, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
    });
  }
}

module.exports = SpecWithTimings;
