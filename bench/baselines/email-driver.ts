// Bench-only Worker around the service's own inbound path (bundled from src/email/inbound.ts by
// bench/suites/email.mjs). One request = one message:
//
//   POST /receive?to=<address>    receive(): route, raw bytes to R2, row + event in D1, triage job
//                                 queued; the event delivered to the audit chain after the answer,
//                                 as the Worker's email handler does (src/index.ts)
//   POST /baseline?to=<address>   the least an email handler does: the raw bytes to R2
import { deliveringAudit } from "../../src/audit/delivery";
import { receive } from "../../src/email/inbound";

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    const to = url.searchParams.get("to") ?? "";
    const raw = await request.arrayBuffer();
    if (url.pathname === "/baseline") {
      await env.FILES.put(`bench/${crypto.randomUUID()}.eml`, raw, { httpMetadata: { contentType: "message/rfc822" } });
      return Response.json({ ok: true });
    }
    const result = await deliveringAudit(env, ctx, () =>
      receive(env, { from: "ada@sender.test", to, raw: new Response(raw).body!, rawSize: raw.byteLength }),
    );
    return Response.json(result, { status: result.ok ? 200 : 400 });
  },
};
