/**
 * A throwaway certificate authority and a server certificate for 127.0.0.1 and localhost, made
 * with openssl at test time (no key is committed). Valid for one day.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export type TestCa = {
  /** PEM of the CA certificate (what a client trusts), and its file. */
  caPem: string;
  caFile: string;
  /** The server's key and certificate (signed by the CA). */
  key: string;
  cert: string;
  dispose(): Promise<void>;
};

export async function makeTestCa(): Promise<TestCa> {
  const dir = await mkdtemp(path.join(tmpdir(), "outpost-ca-"));
  const file = (name: string) => path.join(dir, name);
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  await run("openssl", [
    "req",
    "-x509",
    ...ec,
    "-keyout",
    file("ca.key"),
    "-out",
    file("ca.pem"),
    "-days",
    "1",
    "-subj",
    "/CN=Outpost test CA",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ]);
  await run("openssl", [
    "req",
    ...ec,
    "-keyout",
    file("server.key"),
    "-out",
    file("server.csr"),
    "-subj",
    "/CN=localhost",
  ]);
  await writeFile(
    file("server.ext"),
    "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
  );
  await run("openssl", [
    "x509",
    "-req",
    "-in",
    file("server.csr"),
    "-CA",
    file("ca.pem"),
    "-CAkey",
    file("ca.key"),
    "-CAcreateserial",
    "-out",
    file("server.pem"),
    "-days",
    "1",
    "-extfile",
    file("server.ext"),
  ]);
  return {
    caPem: await readFile(file("ca.pem"), "utf8"),
    caFile: file("ca.pem"),
    key: await readFile(file("server.key"), "utf8"),
    cert: await readFile(file("server.pem"), "utf8"),
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}
