#!/usr/bin/env node
// A CLI starts often: cache compiled code between runs (a no-op where unsupported).
import module from "node:module";

module.enableCompileCache?.();
const { main } = await import("../cli/process.ts");
await main(process.argv.slice(2));
