import { createRoute } from "@hono/zod-openapi";
import { CLOSE, LIMITS, PING_FRAME, PONG_FRAME } from "../../durable-objects/protocol";
import { auditAlone } from "../audit/events";
import { callerEvent } from "../http/audit";
import { BEARER, contractRoute, createRouter, jsonBody, jsonResponse } from "../http/route";
import { forbidden, problemResponse } from "../platform/problem";
import { patSubprotocol, requirePat, requireUpgradeWithPat } from "./auth";
import { AskReplySchema, AskRequestSchema } from "./schemas";
import { askBrowser, connectBrowser, liveConnection, MAX_ASK_STEPS } from "./service";

export const browserRouter = createRouter();

const patOnly =
  "Personal access token only: an OAuth access token or a session is refused with 403, as is a missing, unknown, expired or revoked token; " +
  'such a refusal carries `WWW-Authenticate: Bearer realm="agent-browser"` naming the personal access token it needs.';

/** A 403 that may be a refusal of the credential, with the challenge that names the PAT requirement. */
const patForbidden = (description: string) => ({
  ...problemResponse(description),
  headers: {
    "WWW-Authenticate": {
      description:
        'On a refusal of the credential: `Bearer realm="agent-browser"` with `error="invalid_token"` when a credential was ' +
        "presented, and an `error_description` naming the personal access token (svc_pat_...) the route needs",
      schema: { type: "string" as const },
    },
  },
});

browserRouter.openapi(
  createRoute({
    method: "get",
    path: "/v1/agent-browser/connect",
    tags: ["Local browser"],
    summary: "Connect a browser extension (WebSocket)",
    description: [
      "WebSocket upgrade for the user's browser extension. The token travels as the subprotocol",
      "`Sec-WebSocket-Protocol: svc-pat.<token>`, which the 101 response echoes.",
      patOnly,
      "A newer connection of the same user replaces the older one, which is closed with code",
      `${CLOSE.replaced}. Frames are WebDriver-BiDi-shaped JSON text: the server sends \`{ id, method, params }\``,
      'and the extension answers `{ type: "success", id, result }` or `{ type: "error", id, error, message }`.',
      `Liveness: the text frame \`${PING_FRAME}\` is answered with \`${PONG_FRAME}\`.`,
      `Bounds: frames of at most ${LIMITS.maxFrameChars} characters, text only; at most ${LIMITS.maxFramesPerWindow} frames`,
      `per ${LIMITS.rateWindowMs / 1000} s beyond the replies to the server's commands (else the socket is closed with ${CLOSE.policy});`,
      "a frame that cannot be accepted is",
      "answered with a `session.error` event.",
    ].join(" "),
    security: [{ [BEARER]: [] }],
    middleware: [requireUpgradeWithPat],
    responses: {
      101: { description: "Switching protocols; the subprotocol `svc-pat.<token>` is echoed" },
      403: patForbidden("Missing, unknown, expired or revoked token, or not a personal access token (checked first)"),
      426: problemResponse("A valid personal access token, but not a WebSocket upgrade request"),
    },
  }),
  async (c) => {
    const caller = c.var.caller;
    const { response, connectionId } = await connectBrowser(c.env, caller);
    if (response.status !== 101 || !response.webSocket) {
      throw new Error(`browser session refused the upgrade: ${response.status}`);
    }
    await auditAlone(
      c.env,
      callerEvent(c, {
        kind: "browser.connect",
        target: `browser_session:${connectionId}`,
        subjectUserId: caller.userId,
        details: { token_id: caller.credentialId },
      }),
    );
    const protocol = patSubprotocol(c.req.header("Sec-WebSocket-Protocol"));
    return new Response(null, {
      status: 101,
      webSocket: response.webSocket,
      headers: protocol ? { "Sec-WebSocket-Protocol": protocol } : {},
    });
  },
);

browserRouter.openapi(
  contractRoute({
    method: "post",
    path: "/v1/agent-browser/ask",
    tags: ["Local browser"],
    summary: "Run an agent on the user's connected browser",
    description: [
      "Runs, synchronously, the workspace default agent (or `agent_slug`) limited to the computer tools",
      "(computer_screenshot, computer_navigate, computer_click, computer_type, computer_key, computer_scroll,",
      "computer_url, computer_read), each one a command to the user's connected browser. The scope `svc:computer`",
      `is granted to this turn only. At most ${MAX_ASK_STEPS} model steps; \`timeout_ms\` bounds the whole turn.`,
      "A dropped browser, a failing browser command or the deadline ends the turn with a plain `reply`.",
      patOnly,
    ].join(" "),
    security: [{ [BEARER]: [] }],
    middleware: [requirePat],
    request: { body: jsonBody(AskRequestSchema) },
    responses: {
      200: jsonResponse(AskReplySchema, "The agent's reply and the number of model steps"),
      400: problemResponse("Invalid request, or the agent is disabled"),
      403: patForbidden(
        "Missing or invalid personal access token (`pat_required`, `invalid_token`), or no live browser connection " +
          "for the user (`browser_not_connected`, without a challenge)",
      ),
      404: problemResponse("No such agent in the workspace"),
      502: problemResponse(
        "The model provider refused or failed the call (`model_error`: `detail` is its message, `provider_status` its HTTP status)",
      ),
      503: problemResponse("No language model configured"),
    },
  }),
  async (c) => {
    const caller = c.var.caller;
    const body = c.req.valid("json");
    const connection = await liveConnection(c.env, caller);
    if (!connection) {
      await auditAlone(
        c.env,
        callerEvent(c, {
          kind: "browser.ask",
          outcome: "denied",
          target: `user:${caller.userId}`,
          subjectUserId: caller.userId,
          details: { finish: "not_connected", steps: 0 },
        }),
      );
      throw forbidden(
        "browser_not_connected",
        "Your browser is not connected: start the extension (or the bridge) and try again",
      );
    }
    const outcome = await askBrowser(c.env, caller, body);
    await auditAlone(
      c.env,
      callerEvent(c, {
        kind: "browser.ask",
        outcome: outcome.finish === "answered" ? "success" : "error",
        target: `browser_session:${connection.connectionId}`,
        agentId: outcome.agent.id,
        subjectUserId: caller.userId,
        details: {
          agent_slug: outcome.agent.slug,
          steps: outcome.steps,
          tool_calls: outcome.methods.length,
          methods: outcome.methods,
          finish: outcome.finish,
          timeout_ms: body.timeout_ms ?? null,
          duration_ms: outcome.durationMs,
        },
      }),
    );
    return c.json({ reply: outcome.reply, steps: outcome.steps }, 200);
  },
);
