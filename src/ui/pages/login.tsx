/** Sign-in with an org token, and the error page every UI failure renders. */
import { Csrf, Layout, Notice } from "../layout.tsx";

export function LoginPage(props: { csrf: string; next: string; error?: string | undefined }) {
  return (
    <Layout title="Sign in" section="login">
      <div class="login">
        {props.error ? <Notice kind="error">{props.error}</Notice> : null}
        <p>Sign in with an org token. The token is exchanged for a session; it is not stored.</p>
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
        {props.signIn ? (
          <a href="/ui/login">Sign in</a>
        ) : (
          <a href="/ui/pools">Back to the dashboard</a>
        )}
      </p>
    </Layout>
  );
}
