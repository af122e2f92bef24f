import { logError } from "../platform/log";

/** How long a provider's model list is trusted in an isolate: a model it adds shows up within this. */
export const MODEL_LIST_TTL_MS = 5 * 60_000;
const TIMEOUT_MS = 5_000;

/** Lists kept per isolate, by endpoint and key (safe to lose: the next save fetches again). */
const lists = new Map<string, { ids: readonly string[]; until: number }>();

/**
 * The model ids the configured OpenAI-compatible provider offers (`GET {LLM_BASE_URL}/models`,
 * OpenAI's `{ data: [{ id }] }`), or null when it cannot tell: no `LLM_BASE_URL` (the Workers AI
 * binding has no such list), or a provider that answers no list (404, 501, a network error, a
 * body of another shape). Only lists are cached, so a provider that comes back is asked again.
 */
export async function providerModels(env: Env, now = Date.now()): Promise<readonly string[] | null> {
  if (!env.LLM_BASE_URL) return null;
  const base = env.LLM_BASE_URL.replace(/\/+$/, "");
  const key = `${base}\n${env.LLM_API_KEY ?? ""}`;
  const cached = lists.get(key);
  if (cached && cached.until > now) return cached.ids;
  const ids = await fetchList(base, env.LLM_API_KEY);
  if (!ids) return null;
  if (lists.size >= 8) lists.clear();
  lists.set(key, { ids, until: now + MODEL_LIST_TTL_MS });
  return ids;
}

async function fetchList(base: string, apiKey: string | undefined): Promise<string[] | null> {
  try {
    const res = await fetch(`${base}/models`, {
      headers: { Accept: "application/json", ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}) },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    if (!res.ok) {
      await res.body?.cancel();
      return null;
    }
    const body = (await res.json()) as { data?: unknown };
    if (!Array.isArray(body.data)) return null;
    const ids = body.data.flatMap((m) =>
      typeof (m as { id?: unknown })?.id === "string" ? [(m as { id: string }).id] : [],
    );
    return ids.length ? ids : null;
  } catch (e) {
    logError("model provider: listing its models failed", e instanceof Error ? e.message : String(e));
    return null;
  }
}
