// Loaded into every mocha process (.mocharc.json's "require"); does something only in the worker processes
// of parallel mode, the only ones with an IPC channel to a parent.
//
// A worker sends its file's results to mocha's main process as JSON, and JSON has no BigInt: a failure
// whose error carries one anywhere (an assertion on generations, a DomainError's details) made the send
// throw, and the whole file's results were lost, reported as one "Uncaught error outside test suite".
// BigInts go as text ("12n") instead.
if (process.send) {
  const send = process.send.bind(process) as (message: unknown, ...rest: unknown[]) => boolean;
  process.send = ((message: unknown, ...rest: unknown[]) =>
    send(JSON.parse(JSON.stringify(message, (_key, value) => (typeof value === "bigint" ? `${value}n` : value))), ...rest)) as typeof process.send;
}

export {};
