/**
 * The configuration upload of a workspace page: a `.tar.gz` file, or a folder chosen in the
 * browser and packed there by the page script (`assets/folder-upload.ts`); both post the same
 * multipart form to the same route, which checks the archive as the API does.
 */
import type { Workspace } from "../../workspaces/service.ts";
import { Csrf, type Viewer } from "../layout.tsx";

/** Uploads a `.tar.gz`, or a folder packed in the browser, as the workspace's newest configuration. */
export function UploadConfigurationForm(props: { viewer: Viewer; workspace: Workspace }) {
  return (
    <>
      <UploadArchiveForm {...props} />
      <UploadFolderForm {...props} />
    </>
  );
}

function UploadArchiveForm(props: { viewer: Viewer; workspace: Workspace }) {
  return (
    <form
      method="post"
      action={`/ui/workspaces/${props.workspace.id}/configurations`}
      enctype="multipart/form-data"
    >
      <Csrf token={props.viewer.csrf} />
      <fieldset>
        <legend>Upload a configuration</legend>
        <div class="row">
          <div>
            <label for="upload-file">Configuration (.tar.gz)</label>
            <input
              id="upload-file"
              type="file"
              name="configuration"
              accept=".tar.gz,.tgz,application/gzip"
              required
            />
          </div>
          <button type="submit">Upload</button>
        </div>
      </fieldset>
    </form>
  );
}

/**
 * A folder chosen in the browser, packed there into a `.tar.gz` (paths relative to the folder,
 * without `.terraform/` and `.git/`) and posted to the same route as the archive form. It needs
 * the page script, which shows it; without the script it stays hidden and the archive form
 * does the job.
 */
function UploadFolderForm(props: { viewer: Viewer; workspace: Workspace }) {
  return (
    <form
      method="post"
      action={`/ui/workspaces/${props.workspace.id}/configurations`}
      enctype="multipart/form-data"
      data-folder-upload
      hidden
    >
      <Csrf token={props.viewer.csrf} />
      <fieldset>
        <legend>Upload a configuration folder</legend>
        <div class="row">
          <div>
            <label for="upload-folder">Folder (packed here, without .terraform/ and .git/)</label>
            <input id="upload-folder" type="file" webkitdirectory multiple required />
          </div>
          <button type="submit">Upload folder</button>
        </div>
        <p class="muted" role="status" data-folder-status />
      </fieldset>
    </form>
  );
}
