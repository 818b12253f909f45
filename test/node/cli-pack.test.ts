import {
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { configFile, loadCredentials, saveCredentials } from "../../agent/src/cli/config-store.ts";
import { UsageError } from "../../agent/src/cli/errors.ts";
import { packConfiguration } from "../../agent/src/cli/pack.ts";

const base = mkdtempSync(path.join(tmpdir(), "outpost-cli-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(base, "tree-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

/** Entry names of a tar.gz, read from the ustar headers. */
function tarNames(archive: Buffer): string[] {
  const tar = gunzipSync(archive);
  const names: string[] = [];
  for (let offset = 0; offset + 512 <= tar.length; ) {
    const header = tar.subarray(offset, offset + 512);
    const name = header.subarray(0, 100).toString("utf8").replace(/\0.*$/s, "");
    if (name === "") {
      break;
    }
    const prefix = header.subarray(345, 500).toString("utf8").replace(/\0.*$/s, "");
    const size = Number.parseInt(header.subarray(124, 136).toString("utf8").trim() || "0", 8);
    const type = String.fromCharCode(header[156] ?? 48);
    if (type !== "x" && type !== "g") {
      names.push(prefix ? `${prefix}/${name}` : name);
    }
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return names;
}

describe("outpost run's packing", () => {
  it("honours .terraformignore (gitignore syntax, negation) and always skips .git/ and .terraform/", async () => {
    const dir = tree({
      "main.tf": "",
      "secrets.auto.tfvars": "x",
      "modules/net/main.tf": "",
      "modules/net/notes.tmp": "",
      "modules/net/keep.tmp": "",
      "build/out.bin": "",
      ".git/HEAD": "ref",
      "modules/net/.terraform/providers/x": "",
      ".terraform/terraform.tfstate": "{}",
      ".terraformignore": "# comments are fine\n*.tfvars\n*.tmp\n!keep.tmp\nbuild/\n",
    });
    symlinkSync("main.tf", path.join(dir, "link.tf"));
    const { archive, entries } = await packConfiguration(dir);
    expect(entries).toEqual([
      ".terraformignore",
      "link.tf",
      "main.tf",
      "modules",
      "modules/net",
      "modules/net/keep.tmp",
      "modules/net/main.tf",
    ]);
    expect(tarNames(archive).map((n) => n.replace(/\/$/, ""))).toEqual(entries);
  });

  it("packs the same tree to the same bytes", async () => {
    const dir = tree({ "main.tf": 'resource "x" "y" {}\n', "b/c.tf": "" });
    const first = await packConfiguration(dir);
    writeFileSync(path.join(dir, "main.tf"), 'resource "x" "y" {}\n');
    // Another modification time than the first pack saw.
    utimesSync(path.join(dir, "main.tf"), new Date("2001-02-03"), new Date("2001-02-03"));
    const second = await packConfiguration(dir);
    expect(second.archive.equals(first.archive)).toBe(true);
  });

  it("refuses a directory without terraform files, or one that does not exist", async () => {
    await expect(packConfiguration(tree({ "README.md": "" }))).rejects.toThrow(UsageError);
    await expect(
      packConfiguration(tree({ "a.tf": "", ".terraformignore": "*.tf\n" })),
    ).rejects.toThrow(/no \.tf files/);
    await expect(packConfiguration(path.join(base, "missing"))).rejects.toThrow(/cannot read/);
  });
});

describe("the CLI's saved login", () => {
  it("is written 0600 in a 0700 directory under XDG_CONFIG_HOME", async () => {
    const env = { XDG_CONFIG_HOME: path.join(base, "xdg"), HOME: base };
    const token = `op_org_${"t".repeat(43)}`;
    const file = await saveCredentials(env, { address: "https://o.example", token });
    expect(file).toBe(path.join(base, "xdg", "outpost", "config.json"));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(await loadCredentials(env)).toEqual({ address: "https://o.example", token });
  });

  it("defaults to ~/.config, and the environment wins over the file (for CI)", async () => {
    expect(configFile({ HOME: "/home/u" })).toBe("/home/u/.config/outpost/config.json");
    const env = { XDG_CONFIG_HOME: path.join(base, "xdg2"), HOME: base };
    await saveCredentials(env, {
      address: "https://saved.example",
      token: `op_org_${"s".repeat(43)}`,
    });
    const fromEnv = await loadCredentials({
      ...env,
      OUTPOST_ADDRESS: "https://ci.example/",
      OUTPOST_TOKEN: `op_org_${"c".repeat(43)}`,
    });
    expect(fromEnv).toEqual({ address: "https://ci.example", token: `op_org_${"c".repeat(43)}` });
    await expect(
      loadCredentials({ ...env, OUTPOST_TOKEN: `op_agent_${"a".repeat(43)}` }),
    ).rejects.toThrow(/the token must be an org, team or personal token/);
  });
});
