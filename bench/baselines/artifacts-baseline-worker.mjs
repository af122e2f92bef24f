// Baseline for bench/suites/artifacts.mjs: a bare R2 `get` streamed back, with nothing around it:
// no router, no authentication, no D1 read, no headers beyond type and length.
//
//   GET /get?key=<r2 key>

export default {
  async fetch(request, env) {
    const key = new URL(request.url).searchParams.get("key");
    const object = key ? await env.FILES.get(key) : null;
    if (!object) return new Response("not found", { status: 404 });
    return new Response(object.body, {
      headers: {
        "content-type": object.httpMetadata?.contentType ?? "application/octet-stream",
        "content-length": String(object.size),
      },
    });
  },
};
