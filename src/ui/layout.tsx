/**
 * The page shell and small shared pieces. Every dynamic string goes through JSX, which escapes
 * text and attribute values; nothing here uses raw HTML.
 */
import { raw } from "hono/html";
import type { Child } from "hono/jsx";
import { decideWorkspace, type Grants, type WorkspaceAction } from "../authz/model.ts";
import { type Role, roleAtLeast } from "../tokens/model.ts";
import { CSRF_FIELD } from "./session.ts";

/**
 * Who looks at a page: a name to show (a person's name or email, a token's description), the
 * organization role, and on a workspace's pages what it holds there, so a page offers only what
 * the viewer may do (the server decides again on submit); and when the page is rendered (the
 * request's clock, for relative times).
 */
export type Viewer = {
  name: string;
  role: Role | null;
  csrf: string;
  grants?: Grants | undefined;
  now: number;
};

/** Whether the viewer's organization role is at least `role`. */
export function viewerHasRole(viewer: Viewer, role: Role): boolean {
  return viewer.role !== null && roleAtLeast(viewer.role, role);
}

/** Whether the viewer may do `action` on the workspace its page is about. */
export function viewerMay(viewer: Viewer, action: WorkspaceAction): boolean {
  const grants = viewer.grants ?? { role: viewer.role, teamLevel: null };
  return decideWorkspace(grants, action) === "allow";
}

const NAV = [
  { href: "/ui/pools", label: "Agent pools", key: "pools", role: "reader" },
  { href: "/ui/projects", label: "Projects", key: "projects", role: null },
  { href: "/ui/workspaces", label: "Workspaces", key: "workspaces", role: null },
  { href: "/ui/runs", label: "Runs", key: "runs", role: null },
  { href: "/ui/variable-sets", label: "Variable sets", key: "variable-sets", role: "reader" },
  { href: "/ui/vcs-hooks", label: "VCS hooks", key: "vcs-hooks", role: "admin" },
  // Org tokens, people and sign-in are an owner's business, as in the API.
  { href: "/ui/tokens", label: "Org tokens", key: "tokens", role: "owner" },
  { href: "/ui/people", label: "People", key: "people", role: "owner" },
] as const;

export type Section = (typeof NAV)[number]["key"] | "login" | "account";

/** The whole page: header with navigation and sign-out, then `children` in `<main>`. */
export function Layout(props: {
  title: string;
  section: Section;
  viewer?: Viewer | undefined;
  children: Child;
}) {
  const viewer = props.viewer;
  return (
    <>
      {raw("<!doctype html>")}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>{`${props.title} · Outpost`}</title>
          <link rel="icon" href="/ui/static/favicon.svg" type="image/svg+xml" />
          <link rel="stylesheet" href="/ui/static/app.css" />
          <script src="/ui/static/app.js" defer />
        </head>
        <body>
          <a class="skip" href="#main">
            Skip to content
          </a>
          <header class="top">
            <a href="/ui">Outpost</a>
            {viewer ? (
              <>
                <nav aria-label="Main">
                  <ul>
                    {NAV.filter(
                      (item) => item.role === null || viewerHasRole(viewer, item.role),
                    ).map((item) => (
                      <li>
                        <a
                          href={item.href}
                          aria-current={item.key === props.section ? "page" : undefined}
                        >
                          {item.label}
                        </a>
                      </li>
                    ))}
                  </ul>
                </nav>
                <div class="who">
                  <span id="signed-in-as">
                    {viewer.name} ({viewer.role ?? "no organization role"})
                  </span>
                  <form method="post" action="/ui/logout" class="inline">
                    <Csrf token={viewer.csrf} />
                    <button type="submit">Sign out</button>
                  </form>
                </div>
              </>
            ) : null}
          </header>
          <main id="main">
            <h1>{props.title}</h1>
            {props.children}
          </main>
        </body>
      </html>
    </>
  );
}

/** The hidden CSRF field every form carries. */
export function Csrf(props: { token: string }) {
  return <input type="hidden" name={CSRF_FIELD} value={props.token} />;
}

/**
 * A revoke button that needs the token's description typed first; the server checks the typed
 * text again, so the form works without JavaScript too.
 */
export function TypedRevokeForm(props: {
  action: string;
  csrf: string;
  tokenId: string;
  description: string;
}) {
  return (
    <form method="post" action={props.action} data-typed-confirm="">
      <Csrf token={props.csrf} />
      <label for={`confirm-${props.tokenId}`}>Type the description to revoke</label>
      <div class="row">
        <input
          id={`confirm-${props.tokenId}`}
          name="confirm"
          autocomplete="off"
          data-expected={props.description}
          required
        />
        <button type="submit" class="danger">
          Revoke
        </button>
      </div>
    </form>
  );
}

/** A status word with its colour class; the word itself is always shown, never colour alone. */
export function Badge(props: { status: string }) {
  return <span class={`badge status-${props.status.replace(/[^a-z_]/g, "")}`}>{props.status}</span>;
}

/** `2026-05-01 12:00:03 UTC`: the absolute form shown on hover. */
export function absoluteTime(iso: string): string {
  return iso.replace("T", " ").replace(/(\.\d+)?Z$/, " UTC");
}

/** "just now", "12 s ago", "5 min ago", "3 h ago", "2 d ago" (or "in …" for the future). */
export function relativeTime(iso: string, nowMs: number): string {
  const diffMs = nowMs - Date.parse(iso);
  const seconds = Math.round(Math.abs(diffMs) / 1000);
  const units: [number, string][] = [
    [86_400, "d"],
    [3_600, "h"],
    [60, "min"],
    [1, "s"],
  ];
  if (seconds < 5) {
    return "just now";
  }
  const [size, unit] = units.find(([size]) => seconds >= size) ?? [1, "s"];
  const amount = `${Math.floor(seconds / size)} ${unit}`;
  return diffMs >= 0 ? `${amount} ago` : `in ${amount}`;
}

/**
 * A time as people read it: relative ("12 s ago", kept current by the page script) with the
 * absolute UTC time on hover and in `datetime`; "never" for null. `now` is when the page is
 * rendered.
 */
export function Time(props: { iso: string | null | undefined; now: number }) {
  if (!props.iso) {
    return <span class="muted">never</span>;
  }
  return (
    <time datetime={props.iso} title={absoluteTime(props.iso)} data-relative="">
      {relativeTime(props.iso, props.now)}
    </time>
  );
}

/** A notice box; `kind` error is announced to assistive technology at once. */
export function Notice(props: { kind?: "error" | "ok" | "info"; children: Child }) {
  const kind = props.kind ?? "info";
  return (
    <div
      class={`notice ${kind === "info" ? "" : kind}`}
      role={kind === "error" ? "alert" : "status"}
    >
      {props.children}
    </div>
  );
}

/** A one-time secret with a copy button (shown only when the script runs). */
export function Secret(props: { id: string; label: string; value: string }) {
  return (
    <div>
      <p>
        <strong>{props.label}</strong>
      </p>
      <div class="secret">
        <pre id={props.id} class="mono">
          {props.value}
        </pre>
        <button type="button" class="secondary" data-copy={props.id} hidden>
          Copy
        </button>
      </div>
    </div>
  );
}
