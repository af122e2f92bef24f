import Stripe from "stripe";
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
