/**
 * Signed engine downloads: the installer checks the OpenPGP signature of a release's checksums
 * file before it trusts a checksum, against the vendor's built-in key and the operator's
 * `--engine-keyring`. A loopback mirror signs with keys made here (openpgp, and Debian's gpg
 * for a signature made the way vendors make theirs); each refusal names the keys.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { createMessage, reformatKey, sign } from "openpgp";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type InstallOptions, installEngine } from "../../agent/src/engines/install.ts";
import { PULUMI_RELEASE } from "../../agent/src/engines/pulumi-release.ts";
import { EngineInstallError } from "../../agent/src/engines/release.ts";
import {
  readEngineKeyring,
  type TrustedKey,
  vendorKey,
  verifyDetached,
} from "../../agent/src/engines/signatures.ts";
import { terraformDriver } from "../../agent/src/engines/terraform.ts";
import { HASHICORP_KEY, OPENTOFU_KEY } from "../../agent/src/engines/vendor-keys.ts";
import { MirrorServer } from "./helpers/mirror.ts";
import {
  detachedSignature,
  type TestSigner,
  testSigner,
  trustedKeyOf,
  writeKeyring,
} from "./helpers/signing.ts";

const run = promisify(execFile);
const TERRAFORM = terraformDriver.release("terraform");
const TOFU = terraformDriver.release("tofu");
const HASHICORP_LABEL =
  "HashiCorp Security (hashicorp.com/security) <security@hashicorp.com> (C874 011F 0AB4 0511 0D02  1055 3436 5D94 72D7 468F)";
const OPENTOFU_LABEL =
  "OpenTofu (This key is used to sign opentofu providers) <core@opentofu.org> (E3E6 E43D 84CB 852E ADB0  051D 0C0A F313 E5FD 9F80)";
const SUMS = "/terraform/1.9.5/terraform_1.9.5_SHA256SUMS";

const mirror = new MirrorServer();
let mirrorKey: TestSigner;
let stranger: TestSigner;
let dir: string;
let dataDir: string;

beforeAll(async () => {
  [mirrorKey, stranger] = await Promise.all([
    testSigner("Corp Mirror"),
    testSigner("Someone Else"),
    mirror.start(),
  ]);
  dir = mkdtempSync(path.join(tmpdir(), "outpost-signatures-"));
});
afterAll(async () => {
  await mirror.stop();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  dataDir = mkdtempSync(path.join(dir, "data-"));
  mirror.files.clear();
  mirror.requests.length = 0;
  mirror.signer = mirrorKey;
  mirror.publish("terraform", "1.9.5");
});

function install(
  release = TERRAFORM,
  options: Partial<InstallOptions> = {},
  version = "1.9.5",
): ReturnType<typeof installEngine> {
  return installEngine(release, version, {
    dataDir,
    releaseMirror: mirror.url,
    searchPath: "",
    platform: { os: "linux", arch: "amd64" },
    engineKeyring: [trustedKeyOf(mirrorKey)],
    retryBaseMs: 1,
    ...options,
  });
}

/** Nothing was installed and the archive was never fetched: refused before the checksum. */
function expectNothingInstalled(): void {
  expect(mirror.requests.some((r) => r.endsWith(".zip") || r.endsWith(".tar.gz"))).toBe(false);
  const cache = path.join(dataDir, "engines/terraform");
  expect(existsSync(cache) ? readdirSync(cache) : []).toEqual([]);
}

describe("the keys built into the agent", () => {
  it("are HashiCorp's and OpenTofu's published keys, with the fingerprints the vendors document", async () => {
    expect((await vendorKey(HASHICORP_KEY)).label).toBe(HASHICORP_LABEL);
    expect((await vendorKey(OPENTOFU_KEY)).label).toBe(OPENTOFU_LABEL);
    expect(TERRAFORM.signingKey).toBe(HASHICORP_KEY);
    expect(TOFU.signingKey).toBe(OPENTOFU_KEY);
    // Pulumi signs its checksums with cosign only: no OpenPGP key to build in.
    expect(PULUMI_RELEASE.signingKey).toBeNull();
  });

  it("refuses a built-in block that is not the key its fingerprint names", async () => {
    await expect(vendorKey({ ...OPENTOFU_KEY, fingerprint: "0".repeat(40) })).rejects.toThrow(
      /the built-in OpenTofu key is not 0{40} \(it holds E3E6E43D84CB852EADB0051D0C0AF313E5FD9F80\)/,
    );
  });
});

describe("a release whose checksums are signed", () => {
  it("installs when a trusted key signed them, and says which", async () => {
    const lines: string[] = [];
    const tofu = mirror.publish("tofu", "1.8.3");
    expect(tofu.length).toBeGreaterThan(0);
    const installed = await install(TOFU, { onProgress: (l) => lines.push(l) }, "1.8.3");
    expect(installed.source).toBe("download");
    expect(lines).toContain(`tofu_1.8.3_SHA256SUMS is signed by ${mirrorKey.label}`);
    // OpenTofu's GPG signature is `.gpgsig` (its `.sig` is cosign's).
    expect(mirror.requests).toContain("/tofu/1.8.3/tofu_1.8.3_SHA256SUMS.gpgsig");
  });

  it("refuses a missing signature, naming the keys that may sign", async () => {
    mirror.signer = null;
    await expect(install()).rejects.toThrow(
      new EngineInstallError(
        `cannot install terraform 1.9.5: terraform_1.9.5_SHA256SUMS has no signature (${mirror.url}${SUMS}.sig answered 404); it must be signed by ${HASHICORP_LABEL}; ${mirrorKey.label}; refusing to install (1 attempt); no terraform on PATH`,
      ),
    );
    expectNothingInstalled();
  });

  it("refuses a signature by a trusted key that is not of this file", async () => {
    // The mirror changed a checksum after the release was signed.
    const original = mirror.files.get(SUMS) ?? Buffer.alloc(0);
    mirror.files.set(`${SUMS}.sig`, await detachedSignature(mirrorKey, original));
    mirror.files.set(SUMS, Buffer.from(original.toString("utf8").replace(/^[0-9a-f]/m, "0")));
    await expect(install()).rejects.toThrow(
      `terraform_1.9.5_SHA256SUMS: its signature by ${mirrorKey.label} does not verify (Signed digest did not match): the file was changed after it was signed, or the signature is not of this file; refusing to install`,
    );
    expectNothingInstalled();
  });

  it("refuses a signature by a key it does not trust, naming both", async () => {
    mirror.signer = stranger;
    const refused = install();
    await expect(refused).rejects.toThrow(
      `terraform_1.9.5_SHA256SUMS is signed by the key ${stranger.label.replace(/^.*\((.*)\)$/, "$1")}, which is not a key trusted here (trusted: ${HASHICORP_LABEL}; ${mirrorKey.label}); a mirror that re-signs releases needs its public key in --engine-keyring; refusing to install`,
    );
    expectNothingInstalled();
  });

  it("refuses what is not a signature at all", async () => {
    mirror.files.set(`${SUMS}.sig`, Buffer.from("<html>not found</html>"));
    await expect(install()).rejects.toThrow(
      /terraform_1\.9\.5_SHA256SUMS\.sig is not an OpenPGP signature \(.+\); refusing to install/,
    );
    expectNothingInstalled();
  });
});

describe("--engine-keyring", () => {
  it("without it only the vendor's key may sign: a re-signed mirror is refused", async () => {
    await expect(install(TERRAFORM, { engineKeyring: [] })).rejects.toThrow(
      `which is not a key trusted here (trusted: ${HASHICORP_LABEL}); a mirror that re-signs releases needs its public key in --engine-keyring`,
    );
    expectNothingInstalled();
  });

  it("with the mirror's key in an armored keyring file, the same release installs", async () => {
    const keyring = await readEngineKeyring(
      writeKeyring(dataDir, stranger, mirrorKey),
      "--engine-keyring",
    );
    expect(keyring.map((k) => k.label)).toEqual([stranger.label, mirrorKey.label]);
    await expect(install(TERRAFORM, { engineKeyring: keyring })).resolves.toMatchObject({
      source: "download",
    });
  });

  it("takes a binary keyring and a signature made by Debian's gpg, as vendors make theirs", async () => {
    const gnupg = mkdtempSync(path.join(dir, "gnupg-"));
    const gpg = (...args: string[]) =>
      run("gpg", ["--batch", "--homedir", gnupg, "--pinentry-mode", "loopback", ...args]);
    await gpg("--passphrase", "", "--quick-gen-key", "RSA Mirror <rsa@corp.test>", "rsa3072");
    const sums = path.join(gnupg, "SHA256SUMS");
    writeFileSync(sums, mirror.files.get(SUMS) ?? "");
    await gpg("--passphrase", "", "--detach-sign", "--output", `${sums}.sig`, sums);
    await gpg("--export", "--output", path.join(gnupg, "keyring.gpg"));
    mirror.files.set(`${SUMS}.sig`, readFileSync(`${sums}.sig`));
    const keyring = await readEngineKeyring(path.join(gnupg, "keyring.gpg"), "--engine-keyring");
    expect(keyring[0]?.label).toMatch(/^RSA Mirror <rsa@corp\.test> \([0-9A-F ]+\)$/);
    await expect(install(TERRAFORM, { engineKeyring: keyring })).resolves.toMatchObject({
      source: "download",
    });
  }, 60_000);

  it("refuses at start a file that is missing, not a keyring, or holds a private key", async () => {
    const missing = path.join(dataDir, "nope.asc");
    await expect(readEngineKeyring(missing, "--engine-keyring")).rejects.toThrow(
      /^--engine-keyring: cannot read .*nope\.asc: ENOENT/,
    );
    const garbage = path.join(dataDir, "garbage.asc");
    writeFileSync(
      garbage,
      "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nnope\n-----END PGP PUBLIC KEY BLOCK-----\n",
    );
    await expect(readEngineKeyring(garbage, "OUTPOST_ENGINE_KEYRING")).rejects.toThrow(
      /^OUTPOST_ENGINE_KEYRING: .*garbage\.asc is not an OpenPGP public keyring/,
    );
    const secret = path.join(dataDir, "secret.asc");
    writeFileSync(secret, mirrorKey.privateKey.armor());
    await expect(readEngineKeyring(secret, "--engine-keyring")).rejects.toThrow(
      `holds the private key ${mirrorKey.label}; give public keys only (gpg --armor --export)`,
    );
  });
});

describe("keys over time", () => {
  it("accepts a signature made before the vendor refreshed its key's expiry, as HashiCorp did in 2026", async () => {
    const signer = await testSigner("Refreshed Vendor", new Date(Date.now() - 7200_000));
    const signedAt = new Date(Date.now() - 3600_000);
    const data = Buffer.from("abc  terraform_1.0.0_linux_amd64.zip\n");
    const signature = Buffer.from(
      await sign({
        message: await createMessage({ binary: data }),
        signingKeys: signer.privateKey,
        detached: true,
        format: "binary",
        date: signedAt,
      }),
    );
    // New self-signatures, dated after the release was signed (a longer expiry, say).
    const { privateKey } = await reformatKey({
      privateKey: signer.privateKey,
      userIDs: [{ name: "Refreshed Vendor" }],
      keyExpirationTime: 3 * 365 * 86_400,
      format: "object",
    });
    const refreshed: TrustedKey = { key: privateKey.toPublic(), label: "refreshed" };
    const signatureName = "x.sig";
    await expect(
      verifyDetached({ data, signature, keys: [refreshed], what: "SUMS", signatureName }),
    ).resolves.toBe(refreshed);
  });
});

describe("Pulumi, which signs its checksums with cosign only", () => {
  beforeEach(() => {
    mirror.publishPulumi("3.150.0", { os: "linux", arch: "x64" });
  });

  it("without a keyring trusts the checksums as fetched, and the log says so", async () => {
    const lines: string[] = [];
    const installed = await install(
      PULUMI_RELEASE,
      {
        engineKeyring: [],
        onProgress: (l) => lines.push(l),
      },
      "3.150.0",
    );
    expect(installed.source).toBe("download");
    expect(lines).toContain(
      `pulumi publishes no OpenPGP signature of pulumi-3.150.0-checksums.txt (only cosign's): trusting it as fetched from ${mirror.url}/pulumi/3.150.0/pulumi-3.150.0-checksums.txt; give --engine-keyring for a mirror that signs it`,
    );
  });

  it("with a keyring requires the mirror's signature beside the checksums", async () => {
    const lines: string[] = [];
    await expect(
      install(PULUMI_RELEASE, { onProgress: (l) => lines.push(l) }, "3.150.0"),
    ).resolves.toMatchObject({ source: "download" });
    expect(lines).toContain(`pulumi-3.150.0-checksums.txt is signed by ${mirrorKey.label}`);
    mirror.signer = null;
    await expect(install(PULUMI_RELEASE, { dataDir: dir }, "3.150.0")).rejects.toThrow(
      `pulumi-3.150.0-checksums.txt has no signature (${mirror.url}/pulumi/3.150.0/pulumi-3.150.0-checksums.txt.gpgsig answered 404); it must be signed by ${mirrorKey.label}; refusing to install`,
    );
  });
});
