// Preloaded (NODE_OPTIONS=--import) into a process that must run compiled JavaScript only: resolving a
// TypeScript file, or anything of tsx, fails with an error naming it.
import { register } from "node:module";

const hooks = `
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (/\\.[cm]?ts$/.test(new URL(resolved.url).pathname) || resolved.url.includes("/node_modules/tsx/")) {
    throw new Error("compiled-only: loaded " + resolved.url);
  }
  return resolved;
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
