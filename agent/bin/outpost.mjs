#!/usr/bin/env node
// The `outpost` bin. In a checkout it runs the TypeScript sources (Node strips their types), so
// `npx outpost` works right after `npm ci` and runs the code as it is; the packed package has
// no sources and runs the bundle its `prepack` built.
import { existsSync } from "node:fs";

const source = new URL("../src/bin/outpost.ts", import.meta.url);
await import(existsSync(source) ? source.href : "../dist/outpost.mjs");
