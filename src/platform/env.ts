/**
 * Optional secrets and vars: set with `wrangler secret put` (locally in `.dev.vars`), absent
 * by default, so they are not in the generated Env of worker-configuration.d.ts.
 */
declare global {
  interface Env {
    BASE_URL?: string;
    /** base64 of 32 bytes: the AES-GCM key of platform/secret-box.ts. */
    ENCRYPTION_KEY?: string;
    /** The key before the last rotation: values it sealed still open. */
    ENCRYPTION_KEY_PREVIOUS?: string;
    LLM_BASE_URL?: string;
    LLM_API_KEY?: string;
    LLM_MODEL?: string;
    IMAGE_MODEL?: string;
    AI?: Ai;
    STRIPE_SECRET_KEY?: string;
    STRIPE_WEBHOOK_SECRET?: string;
    STRIPE_API_HOST?: string;
    STRIPE_API_PORT?: string;
    STRIPE_API_PROTOCOL?: string;
    /** JSON map of plan or pack slug → Stripe price id. */
    STRIPE_PRICES?: string;
    FREE_MONTHLY_CREDITS?: string;
    /** Web-search provider, Brave Search API shape: `GET {SEARCH_API_URL}?q=` with `X-Subscription-Token`. */
    SEARCH_API_URL?: string;
    SEARCH_API_KEY?: string;
    /** Local development and tests only: JSON map host → origin applied to every guarded outbound fetch. */
    OUTBOUND_ORIGIN_MAP?: string;
    /** Origin that serves app surfaces (a separate registrable domain in production); `{BASE_URL}` when unset. */
    APPS_ORIGIN?: string;
    SLACK_CLIENT_ID?: string;
    SLACK_CLIENT_SECRET?: string;
    SLACK_SIGNING_SECRET?: string;
    /** Connector enrollment: the workspace CA (PEM certificate and PKCS#8 key). */
    CONNECTOR_CA_CERT_PEM?: string;
    CONNECTOR_CA_KEY_PEM?: string;
    /** The audit log's checkpoint signer: a `PRIVATE+KEY+<name>+<key id>+<base64>` Ed25519 signed-note key. */
    AUDIT_SIGNING_KEY?: string;
    /** Witnesses that cosign audit checkpoints: `<verifier key> <URL>` entries, separated by commas or newlines. */
    AUDIT_WITNESSES?: string;
  }
}

/** The public origin: BASE_URL when configured, else the request's own origin. */
export function baseUrl(env: Env, requestUrl: string): string {
  return (env.BASE_URL || new URL(requestUrl).origin).replace(/\/+$/, "");
}

export const nowIso = (): string => new Date().toISOString();
