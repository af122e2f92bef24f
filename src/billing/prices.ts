import { logError } from "../platform/log";

// Apart from the Stripe client (stripe.ts): the catalogue and the credit checks on a turn's path
// read prices, and evaluating the Stripe SDK for them would cost every isolate's startup.

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
