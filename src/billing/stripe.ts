import Stripe from "stripe";
import { logError } from "../platform/log";
import { ApiError } from "../platform/problem";

export type { Stripe };

const notConfigured = () =>
  new ApiError(503, "billing_not_configured", "Billing is not configured on this deployment (no Stripe keys)");

// One client per configuration: the SDK keeps no per-request state, so this is a cache safe to lose.
const clients = new Map<string, Stripe>();

/** The Stripe client configured from env; 503 `billing_not_configured` without STRIPE_SECRET_KEY. */
export function stripeClient(env: Env): Stripe {
  const key = env.STRIPE_SECRET_KEY;
  if (!key) throw notConfigured();
  const port = env.STRIPE_API_PORT ? Number(env.STRIPE_API_PORT) : undefined;
  const cacheKey = [key, env.STRIPE_API_HOST, port, env.STRIPE_API_PROTOCOL].join("|");
  let client = clients.get(cacheKey);
  if (!client) {
    client = new Stripe(key, {
      // Resolve the global fetch per call, not once at construction, so a fetch installed later still applies.
      httpClient: Stripe.createFetchHttpClient((input, init) => fetch(input, init)),
      maxNetworkRetries: 2,
      ...(env.STRIPE_API_HOST ? { host: env.STRIPE_API_HOST } : {}),
      ...(port && Number.isInteger(port) ? { port } : {}),
      ...(env.STRIPE_API_PROTOCOL === "http" || env.STRIPE_API_PROTOCOL === "https"
        ? { protocol: env.STRIPE_API_PROTOCOL }
        : {}),
    });
    clients.set(cacheKey, client);
  }
  return client;
}

const cryptoProvider = Stripe.createSubtleCryptoProvider();

/**
 * Verifies Stripe's signature over the raw body and parses the event; 400 `invalid_signature`
 * when the header is missing or does not match, 503 without STRIPE_WEBHOOK_SECRET.
 */
export async function verifiedEvent(env: Env, rawBody: string, signature: string | undefined): Promise<Stripe.Event> {
  const secret = env.STRIPE_WEBHOOK_SECRET;
  if (!secret || !env.STRIPE_SECRET_KEY) throw notConfigured();
  if (!signature) throw new ApiError(400, "invalid_signature", "The Stripe-Signature header is missing");
  try {
    return await stripeClient(env).webhooks.constructEventAsync(rawBody, signature, secret, undefined, cryptoProvider);
  } catch {
    throw new ApiError(400, "invalid_signature", "The Stripe-Signature header does not match the body");
  }
}

/** Stripe price id per plan or pack slug, from STRIPE_PRICES; a malformed value prices nothing. */
export function prices(env: Env): Record<string, string> {
  const raw = env.STRIPE_PRICES;
  if (!raw) return {};
  const cached = priceCache.get(raw);
  if (cached) return cached;
  let parsed: Record<string, string> = {};
  try {
    const value: unknown = JSON.parse(raw);
    if (value && typeof value === "object" && !Array.isArray(value))
      parsed = Object.fromEntries(
        Object.entries(value).filter((e): e is [string, string] => typeof e[1] === "string" && e[1].length > 0),
      );
  } catch {
    logError("STRIPE_PRICES is not a JSON object; nothing is priced");
  }
  priceCache.set(raw, parsed);
  return parsed;
}
const priceCache = new Map<string, Record<string, string>>();

/** The plan or pack slug a Stripe price id stands for, if any. */
export function slugForPrice(env: Env, priceId: string | null | undefined): string | undefined {
  if (!priceId) return undefined;
  return Object.entries(prices(env)).find(([, id]) => id === priceId)?.[0];
}
