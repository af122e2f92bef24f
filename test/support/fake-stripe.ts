import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { HttpResponse, http } from "msw";
import { setupServer } from "msw/node";
import Stripe from "stripe";
import worker from "../../src/index";
import { freshIp, ORIGIN } from "./api";

/**
 * A fake Stripe API (MSW, in the Worker's isolate) answering the SDK's real requests with
 * Stripe-shaped JSON and recording them. Like Stripe, it answers a repeated Idempotency-Key
 * with the first answer. Pair it with `callWith(STRIPE_ENV, ...)`: the shared test env has
 * no Stripe keys, so plain `call` sees billing "not configured".
 */
export const STRIPE_API = "https://api.stripe.com";
export const WEBHOOK_SECRET = "whsec_test_secret_for_the_fake";
export const PRICES = {
  pro: "price_pro_monthly",
  "credits-1000": "price_pack_1000",
  "credits-5000": "price_pack_5000",
} as const;
export const STRIPE_ENV = {
  STRIPE_SECRET_KEY: "sk_test_fake_key_0123456789",
  STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
  STRIPE_PRICES: JSON.stringify(PRICES),
};

export type StripeRequest = { method: string; path: string; idempotencyKey: string | null; form: URLSearchParams };

let seq = 0;
const nextId = (prefix: string) => `${prefix}_test_${Date.now().toString(36)}${(++seq).toString(36).padStart(4, "0")}`;

export const fakeStripe = {
  requests: [] as StripeRequest[],
  /** Answers already given per Idempotency-Key, as Stripe keeps them. */
  idempotent: new Map<string, unknown>(),
  subscriptions: new Map<string, Record<string, unknown>>(),
  paymentIntents: new Map<string, Record<string, unknown>>(),
  /** When set, POSTs answer with this HTTP status and a Stripe error. */
  failWith: null as number | null,
  reset() {
    this.requests = [];
    this.failWith = null;
  },
  posts(path: string) {
    return this.requests.filter((r) => r.method === "POST" && r.path === path);
  },
};

const notFound = (what: string, id: string) =>
  HttpResponse.json(
    {
      error: {
        type: "invalid_request_error",
        code: "resource_missing",
        message: `No such ${what}: '${id}'`,
        param: "id",
      },
    },
    { status: 404 },
  );

function post(path: string, create: (form: URLSearchParams) => Record<string, unknown>) {
  return http.post(`${STRIPE_API}${path}`, async ({ request }) => {
    const form = new URLSearchParams(new TextDecoder().decode(await request.arrayBuffer()));
    const idempotencyKey = request.headers.get("Idempotency-Key");
    fakeStripe.requests.push({ method: "POST", path, idempotencyKey, form });
    if (fakeStripe.failWith)
      return HttpResponse.json(
        { error: { type: "api_error", message: "Something went wrong on Stripe's end." } },
        { status: fakeStripe.failWith },
      );
    if (idempotencyKey && fakeStripe.idempotent.has(idempotencyKey))
      return HttpResponse.json(fakeStripe.idempotent.get(idempotencyKey) as Record<string, unknown>);
    const body = create(form);
    if (idempotencyKey) fakeStripe.idempotent.set(idempotencyKey, body);
    return HttpResponse.json(body);
  });
}

const metadataOf = (form: URLSearchParams, prefix = "metadata") =>
  Object.fromEntries(
    [...form.entries()]
      .filter(([k]) => k.startsWith(`${prefix}[`))
      .map(([k, v]) => [k.slice(prefix.length + 1, -1), v]),
  );

export const stripeServer = setupServer(
  post("/v1/customers", (form) => ({
    id: nextId("cus"),
    object: "customer",
    created: Math.floor(Date.now() / 1000),
    email: null,
    livemode: false,
    metadata: metadataOf(form),
  })),
  post("/v1/checkout/sessions", (form) => {
    const id = nextId("cs");
    return {
      id,
      object: "checkout.session",
      mode: form.get("mode"),
      customer: form.get("customer"),
      client_reference_id: form.get("client_reference_id"),
      metadata: metadataOf(form),
      payment_status: "unpaid",
      status: "open",
      livemode: false,
      url: `https://checkout.stripe.com/c/pay/${id}`,
    };
  }),
  post("/v1/billing_portal/sessions", (form) => {
    const id = nextId("bps");
    return {
      id,
      object: "billing_portal.session",
      customer: form.get("customer"),
      return_url: form.get("return_url"),
      livemode: false,
      url: `https://billing.stripe.com/p/session/${id}`,
    };
  }),
  http.get(`${STRIPE_API}/v1/subscriptions/:id`, ({ params }) => {
    const id = String(params.id);
    fakeStripe.requests.push({
      method: "GET",
      path: `/v1/subscriptions/${id}`,
      idempotencyKey: null,
      form: new URLSearchParams(),
    });
    const sub = fakeStripe.subscriptions.get(id);
    return sub ? HttpResponse.json(sub) : notFound("subscription", id);
  }),
  http.get(`${STRIPE_API}/v1/payment_intents/:id`, ({ params }) => {
    const id = String(params.id);
    fakeStripe.requests.push({
      method: "GET",
      path: `/v1/payment_intents/${id}`,
      idempotencyKey: null,
      form: new URLSearchParams(),
    });
    const pi = fakeStripe.paymentIntents.get(id);
    return pi ? HttpResponse.json(pi) : notFound("payment_intent", id);
  }),
);

/** A subscription as Stripe returns it (API 2025+ shape: the period lives on the items). */
export function subscription(opts: {
  id?: string;
  customer: string;
  workspaceId?: string;
  price: string;
  status?: string;
  periodEnd?: number;
}): Record<string, unknown> {
  const id = opts.id ?? nextId("sub");
  const periodEnd = opts.periodEnd ?? Math.floor(Date.now() / 1000) + 30 * 86400;
  const sub = {
    id,
    object: "subscription",
    customer: opts.customer,
    status: opts.status ?? "active",
    livemode: false,
    metadata: opts.workspaceId ? { workspace_id: opts.workspaceId } : {},
    items: {
      object: "list",
      data: [
        {
          id: nextId("si"),
          object: "subscription_item",
          price: { id: opts.price, object: "price" },
          quantity: 1,
          current_period_start: periodEnd - 30 * 86400,
          current_period_end: periodEnd,
        },
      ],
    },
  };
  fakeStripe.subscriptions.set(id, sub);
  return sub;
}

export const newStripeId = nextId;

/** A Stripe event envelope around `object`. */
export function stripeEvent(type: string, object: Record<string, unknown>, id = nextId("evt")) {
  return {
    id,
    object: "event",
    api_version: "2026-10-28.endive",
    created: Math.floor(Date.now() / 1000),
    type,
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: { object },
  };
}

const signer = new Stripe("sk_test_signer", { httpClient: Stripe.createFetchHttpClient() });

/** The Stripe-Signature header Stripe would send for `payload`. */
export function sign(payload: string, secret = WEBHOOK_SECRET): Promise<string> {
  return signer.webhooks.generateTestHeaderStringAsync({
    payload,
    secret,
    cryptoProvider: Stripe.createSubtleCryptoProvider(),
  });
}

/** Posts a raw body to the webhook with the Worker configured for Stripe (or with `overrides`). */
export async function postWebhook(
  payload: string,
  signature: string | null,
  overrides: Record<string, unknown> = STRIPE_ENV,
): Promise<Response> {
  const headers: Record<string, string> = { "CF-Connecting-IP": freshIp(), "Content-Type": "application/json" };
  if (signature !== null) headers["Stripe-Signature"] = signature;
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request(`${ORIGIN}/v1/webhooks/stripe`, { method: "POST", headers, body: payload }),
    { ...env, ...overrides } as Env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

/** Signs and posts an event; returns the response. */
export async function deliver(event: ReturnType<typeof stripeEvent>, overrides?: Record<string, unknown>) {
  const payload = JSON.stringify(event);
  return postWebhook(payload, await sign(payload), overrides);
}
