// Signing in (docs/security.md "The console"). The console never holds a credential: signing in
// posts an API token once, and the daemon answers with an HttpOnly, SameSite=Strict session
// cookie (12 hours) that the browser sends by itself. Any 401 from the API shows this form.
import { useEffect, useState } from "preact/hooks";
import { api, ApiError, SIGN_IN_EVENT } from "./api";

export interface Session {
  authentication: boolean;
  email?: string;
  admin?: boolean;
  expireTime?: string;
}

export function useSignInNeeded(): boolean {
  const [needed, setNeeded] = useState(false);
  useEffect(() => {
    const on = () => setNeeded(true);
    window.addEventListener(SIGN_IN_EVENT, on);
    return () => window.removeEventListener(SIGN_IN_EVENT, on);
  }, []);
  return needed;
}

export function SignIn() {
  const [token, setToken] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      await api<Session>("POST", "/console/session", { token: token.trim() }, { quiet: true });
      window.location.reload();
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401
        ? "That token was not accepted: it may be mistyped, expired or revoked."
        : String(err instanceof Error ? err.message : err));
      setBusy(false);
    }
  };
  return (
    <section class="page signin">
      <h1>Sign in</h1>
      <p>
        This Trainyard asks who you are. Paste an API token: your administrator creates one with{" "}
        <code>trainyard admin tokens create YOUR_EMAIL</code> (the first administrator's is in the
        data directory's <code>admin-token</code>).
      </p>
      <form id="signin-form" onSubmit={submit}>
        <label for="signin-token">API token</label>
        <input
          id="signin-token"
          type="password"
          autocomplete="off"
          spellcheck={false}
          placeholder="ty1.…"
          value={token}
          onInput={(e) => setToken((e.target as HTMLInputElement).value)}
        />
        <button id="signin-submit" type="submit" disabled={busy || token.trim() === ""}>
          Sign in
        </button>
      </form>
      {error && <div class="error" id="signin-error">{error}</div>}
      <p class="muted small">
        The console keeps a 12-hour session in a cookie its scripts cannot read; the token itself
        is not stored in the browser.
      </p>
    </section>
  );
}

// "alice@example.com · Sign out" in the header while authentication is on.
export function SessionBar() {
  const [session, setSession] = useState<Session | null>(null);
  useEffect(() => {
    api<Session>("GET", "/console/session", undefined, { quiet: true })
      .then(setSession)
      .catch((e) => {
        if (e instanceof ApiError && e.status === 401) window.dispatchEvent(new Event(SIGN_IN_EVENT));
      });
  }, []);
  if (!session?.authentication) return null;
  const signOut = async () => {
    try {
      await api("DELETE", "/console/session");
    } finally {
      window.location.reload();
    }
  };
  return (
    <span class="session" id="session">
      <span id="session-email">{session.email}</span>
      <button type="button" class="link" id="signout" onClick={signOut}>
        Sign out
      </button>
    </span>
  );
}
