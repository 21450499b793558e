// Why a policy file cannot be used: raised by its reader (policy-json.ts) and its schema check
// (policy-schema.ts) alike.

/** A policy file that cannot be used. The message names the file and where in it, what was found and what is allowed. */
export class PolicyError extends Error {
  constructor(
    /** The file, as given to Policy.parse. */
    readonly source: string,
    /** Where in the file: a JSON path such as `rules[2].verbs[0]`, or `line 3, column 14` for invalid JSON. */
    readonly where: string,
    message: string,
  ) {
    super(`${source}: ${message}`);
    this.name = "PolicyError";
  }
}
