/** Sign-in with an org token, and the error page every UI failure renders. */
import { Csrf, Layout, Notice } from "../layout.tsx";

/** What the sign-in page offers for single sign-on. */
export type SsoChoice = { kind: "none" } | { kind: "button"; org: string } | { kind: "field" };

function ssoHref(org: string, next: string): string {
  const query = new URLSearchParams({ org });
  if (next) {
    query.set("next", next);
  }
  return `/auth/sso/start?${query.toString()}`;
}

/**
 * Single sign-on: a link to the provider's flow (a link, not a form: the page's CSP allows forms
 * to post only here, and the flow redirects to the provider), after naming the organization when
 * the deployment has several.
 */
function SsoSignIn(props: { sso: SsoChoice; next: string }) {
  const { sso } = props;
  if (sso.kind === "none") {
    return null;
  }
  if (sso.kind === "button") {
    return (
      <p class="sso">
        <a class="button" id="sso-sign-in" href={ssoHref(sso.org, props.next)}>
          Sign in with SSO
        </a>
      </p>
    );
  }
  return (
    <form method="get" action="/ui/login" class="sso">
      {props.next ? <input type="hidden" name="next" value={props.next} /> : null}
      <label for="sso-org">Organization</label>
      <div class="row">
        <input id="sso-org" name="org" required autocomplete="organization" />
        <button type="submit">Continue with SSO</button>
      </div>
    </form>
  );
}

export function LoginPage(props: {
  csrf: string;
  next: string;
  sso: SsoChoice;
  error?: string | undefined;
}) {
  return (
    <Layout title="Sign in" section="login">
      <div class="login">
        {props.error ? <Notice kind="error">{props.error}</Notice> : null}
        <SsoSignIn sso={props.sso} next={props.next} />
        <p>
          {props.sso.kind === "none"
            ? "Sign in"
            : "Or, when single sign-on is unavailable, sign in"}{" "}
          with an org token. The token is exchanged for a session; it is not stored.
        </p>
        <form method="post" action="/ui/login">
          <Csrf token={props.csrf} />
          <input type="hidden" name="next" value={props.next} />
          <label for="token">Org token</label>
          <input
            id="token"
            name="token"
            type="password"
            autocomplete="off"
            required
            placeholder="op_org_…"
          />
          <p>
            <button type="submit">Sign in</button>
          </p>
        </form>
      </div>
    </Layout>
  );
}

export function ErrorPage(props: { title: string; message: string; signIn: boolean }) {
  return (
    <Layout title={props.title} section="pools">
      <Notice kind="error">{props.message}</Notice>
      <p>
        {props.signIn ? <a href="/ui/login">Sign in</a> : <a href="/ui">Back to the dashboard</a>}
      </p>
    </Layout>
  );
}
