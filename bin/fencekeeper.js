#!/usr/bin/env node
// The fencekeeper command: runs the TypeScript CLI (cli/main.ts) through tsx.
import { register } from "tsx/esm/api";

register();
await import("../cli/main.ts");
