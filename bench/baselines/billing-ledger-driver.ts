// Bench-only Worker around the service's own ledger module (bundled from src/billing/ledger.ts
// by bench/suites/billing.mjs): what a paid action costs the caller, `requireCredits` then `debit`.
//
//   GET /ledger?ws=<workspace id>   requireCredits(ws), then debit(ws, 1, <fresh reference>)
import { debit, requireCredits } from "../../src/billing/ledger";
import { ApiError } from "../../src/platform/problem";

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const ws = new URL(request.url).searchParams.get("ws");
    if (!ws) return new Response("ws missing", { status: 400 });
    try {
      const balance = await requireCredits(env, ws);
      const { debited } = await debit(env, ws, 1, crypto.randomUUID());
      return Response.json({ balance, debited });
    } catch (e) {
      if (e instanceof ApiError) return Response.json({ code: e.code }, { status: e.status });
      throw e;
    }
  },
};
