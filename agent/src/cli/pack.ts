import type { Dirent } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import ignore, { type Ignore } from "ignore";
import { create } from "tar";
import { UsageError } from "./errors.ts";

/** Directories never uploaded, at any depth: VCS metadata and terraform's local cache. */
const ALWAYS_SKIPPED = [".git/", ".terraform/"];

export type PackedConfiguration = {
  archive: Buffer;
  /** Relative paths that went in (files, links and directories). */
  entries: string[];
};

/**
 * Packs `dir` as a tar.gz the way `terraform` uploads to a remote backend: every file below it
 * except what `.terraformignore` (gitignore syntax) excludes, and never `.git/` or `.terraform/`.
 * Symlinks are stored as links (the coordinator refuses ones that leave the tree); owners and
 * modification times are not recorded, so the same tree packs to the same bytes.
 */
export async function packConfiguration(dir: string): Promise<PackedConfiguration> {
  const root = path.resolve(dir);
  let top: Dirent[];
  try {
    top = await readdir(root, { withFileTypes: true });
  } catch (error) {
    throw new UsageError(`cannot read ${dir} (${(error as NodeJS.ErrnoException).code})`);
  }
  const rules = ignore().add(ALWAYS_SKIPPED);
  const ignoreFile = top.find((e) => e.name === ".terraformignore" && e.isFile());
  if (ignoreFile) {
    rules.add(await readFile(path.join(root, ".terraformignore"), "utf8"));
  }
  const entries = await walk(root, "", rules);
  if (!entries.some((e) => e.endsWith(".tf") || e.endsWith(".tf.json"))) {
    throw new UsageError(`${dir} holds no .tf files to upload (after .terraformignore)`);
  }
  const chunks: Buffer[] = [];
  const stream = create(
    { gzip: true, cwd: root, portable: true, noMtime: true, noDirRecurse: true, follow: false },
    entries,
  );
  for await (const chunk of stream) {
    chunks.push(Buffer.from(chunk as Uint8Array));
  }
  return { archive: Buffer.concat(chunks), entries };
}

async function walk(root: string, rel: string, rules: Ignore): Promise<string[]> {
  const found: string[] = [];
  const dirents = await readdir(path.join(root, rel), { withFileTypes: true });
  dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of dirents) {
    const name = rel === "" ? entry.name : `${rel}/${entry.name}`;
    if (entry.isDirectory()) {
      if (!rules.ignores(`${name}/`)) {
        found.push(name, ...(await walk(root, name, rules)));
      }
    } else if ((entry.isFile() || entry.isSymbolicLink()) && !rules.ignores(name)) {
      found.push(name);
    }
  }
  return found;
}
