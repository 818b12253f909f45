/** Uploads and a tree of every entry kind a valid configuration may contain. */
import { type ErrorBody, requestJson } from "./api.ts";
import type { TestOrg } from "./fixtures.ts";
import type { TarTestEntry } from "./tarball.ts";

export type Version = {
  id: string;
  workspaceId: string;
  source: string;
  sha256: string;
  sizeBytes: number;
  createdBy: string;
  createdAt: string;
};

/** Directories, "./" names, in-tree symlinks and a hard link, a ustar prefix, a pax long path. */
export const GOOD_TREE: TarTestEntry[] = [
  { name: "./", type: "dir" },
  { name: "./main.tf", body: 'terraform {}\nresource "null_resource" "x" {}\n' },
  { name: "modules/", type: "dir" },
  { name: "modules/vpc/main.tf", body: 'variable "cidr" {}\n' },
  { name: "modules/shared", type: "symlink", linkname: "vpc" },
  { name: "modules/vpc/up.tf", type: "symlink", linkname: "../../main.tf" },
  { name: "copy.tf", type: "link", linkname: "main.tf" },
  { name: "main.tf", prefix: "envs/prod", body: "# prod\n" },
  { name: "pax-named", type: "pax", pax: { path: `deep/${"d".repeat(150)}/file.tf` } },
  { name: "placeholder", body: "# long name via pax\n" },
];

/** POSTs a tarball as the org's member. */
export function upload(org: TestOrg, ws: string, body: Uint8Array, headers = {}) {
  return requestJson<Version & ErrorBody>(`/api/v1/workspaces/${ws}/configuration-versions`, {
    method: "POST",
    token: org.tokens.member,
    body,
    headers: { "content-type": "application/gzip", ...headers },
  });
}
