/**
 * The folder upload of the workspace page: the files of a folder chosen in the browser
 * (`<input type=file webkitdirectory>`) packed into a `.tar.gz` here (modern-tar writes the tar,
 * fflate gzips it) and posted as the `configuration` file of the form, the same request the
 * archive form makes. Paths are relative to the chosen folder; `.terraform/` and `.git/` (a local
 * provider cache and a repository's history) are left out at any depth.
 */
import { gzipSync } from "fflate";
import { packTar } from "modern-tar";

/** Never uploaded: what `terraform init` downloads and a repository's history. */
const SKIPPED = new Set([".terraform", ".git"]);

/** A chosen file's path inside the chosen folder, or null when it is left out. */
export function packedPath(relativePath: string): string | null {
  // webkitRelativePath starts with the chosen folder's own name.
  const parts = relativePath.split("/").slice(1);
  if (parts.length === 0 || parts.some((p) => p === "" || p === "." || p === "..")) {
    return null;
  }
  // A `.git` file (a worktree's or submodule's pointer) goes too; `.terraform.lock.hcl` stays.
  return parts.some((p) => SKIPPED.has(p)) ? null : parts.join("/");
}

/** The `.tar.gz` of the chosen files, and how many went in. */
export async function packFolder(
  files: readonly File[],
): Promise<{ archive: Uint8Array<ArrayBuffer>; count: number }> {
  const entries = [];
  for (const file of files) {
    const name = packedPath(file.webkitRelativePath);
    if (name !== null) {
      entries.push({
        header: {
          name,
          size: file.size,
          type: "file" as const,
          mode: 0o644,
          mtime: new Date(file.lastModified),
        },
        body: new Uint8Array(await file.arrayBuffer()),
      });
    }
  }
  // A copy typed on a plain ArrayBuffer, as a File's parts must be.
  return { archive: new Uint8Array(gzipSync(await packTar(entries))), count: entries.length };
}

/** The sentence of the error page the upload answered with, else its status. */
async function errorOf(res: Response): Promise<string> {
  const page = new DOMParser().parseFromString(await res.text(), "text/html");
  return (
    page.querySelector("[role=alert]")?.textContent?.trim() || `the upload answered ${res.status}`
  );
}

/** Shows the folder form and sends its folder as a packed archive instead of a plain submit. */
export function setupFolderUpload(form: HTMLFormElement): void {
  const input = form.querySelector<HTMLInputElement>("input[type=file]");
  const status = form.querySelector<HTMLElement>("[data-folder-status]");
  const csrf = form.querySelector<HTMLInputElement>("input[name=_csrf]");
  if (!input || !status || !csrf) {
    return;
  }
  form.hidden = false;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const say = (text: string) => {
      status.textContent = text;
    };
    say("Packing the folder…");
    void (async () => {
      const { archive, count } = await packFolder([...(input.files ?? [])]);
      if (count === 0) {
        say("The folder holds no files to upload (.terraform/ and .git/ are left out).");
        return;
      }
      say(`Uploading ${count} files (${archive.byteLength} bytes packed)…`);
      const body = new FormData();
      body.set("_csrf", csrf.value);
      body.set(
        "configuration",
        new File([archive], "configuration.tar.gz", { type: "application/gzip" }),
      );
      const res = await fetch(form.action, { method: "POST", body, credentials: "same-origin" });
      if (res.ok && res.redirected) {
        window.location.assign(res.url);
      } else {
        say(`Not uploaded: ${await errorOf(res)}`);
      }
    })().catch((error: unknown) => {
      say(`Not uploaded: ${error instanceof Error ? error.message : String(error)}`);
    });
  });
}
