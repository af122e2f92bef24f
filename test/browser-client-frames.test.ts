/**
 * The client side of the frame protocol, shared by the extension and the reference bridge:
 * "extension → server reply { type: "success", id, result } | { type: "error", id, error, message? }".
 */
import { describe, expect, it } from "vitest";
import { afterClose, answerCommand, CLOSE, PONG_FRAME, serveCommands } from "../durable-objects/protocol";

async function answer(text: string, run: Parameters<typeof answerCommand>[1] = async () => ({})) {
  const sent: Record<string, unknown>[] = [];
  const logged: string[] = [];
  await answerCommand(
    text,
    run,
    (frame) => sent.push(frame as Record<string, unknown>),
    (line) => logged.push(line),
  );
  return { sent, logged };
}

describe("answerCommand", () => {
  it("answers a valid command with its result, in a success frame", async () => {
    const { sent } = await answer(
      JSON.stringify({ id: 7, method: "computer.click", params: { x: 1, y: 2 } }),
      async (method, params) => ({ method, params }),
    );
    expect(sent).toEqual([{ type: "success", id: 7, result: { method: "computer.click", params: { x: 1, y: 2 } } }]);
  });

  it("logs a server event or a non-JSON frame and sends nothing", async () => {
    const event = await answer(JSON.stringify({ type: "event", method: "session.error", params: {} }));
    expect(event.sent).toEqual([]);
    expect(event.logged[0]).toMatch(/^server event /);
    const junk = await answer("not json");
    expect(junk).toEqual({ sent: [], logged: ["ignored a non-JSON frame"] });
  });

  it("answers an unknown method naming an id with `unknown command`, and bad params with `invalid argument`", async () => {
    const unknown = await answer(JSON.stringify({ id: 3, method: "computer.fly", params: {} }));
    expect(unknown.sent).toMatchObject([{ type: "error", id: 3, error: "unknown command" }]);
    const bad = await answer(JSON.stringify({ id: 4, method: "computer.click", params: { x: -1, y: 0 } }));
    expect(bad.sent).toMatchObject([{ type: "error", id: 4, error: "invalid argument" }]);
    const noId = await answer(JSON.stringify({ method: "computer.fly" }));
    expect(noId.sent).toEqual([]);
  });

  it("maps a TimeoutError or NotAllowedError to its code, anything else to `unknown error`", async () => {
    const failing = (name: string) => async () => {
      const error = new Error(`${name} happened`);
      error.name = name;
      throw error;
    };
    const frame = JSON.stringify({ id: 1, method: "computer.screenshot", params: {} });
    expect((await answer(frame, failing("TimeoutError"))).sent).toEqual([
      { type: "error", id: 1, error: "timeout", message: "TimeoutError happened" },
    ]);
    expect((await answer(frame, failing("NotAllowedError"))).sent[0]).toMatchObject({ error: "not allowed" });
    expect((await answer(frame, failing("Error"))).sent[0]).toMatchObject({ error: "unknown error" });
  });
});

describe("serveCommands and afterClose", () => {
  it("announces computer.ready once open, answers commands in order, and ignores pongs", async () => {
    const listeners: Record<string, ((event: { data: unknown }) => void)[]> = { open: [], message: [], close: [] };
    const sent: string[] = [];
    const ws = {
      readyState: 1,
      send: (data: string) => sent.push(data),
      addEventListener: (type: string, listener: (event: { data: unknown }) => void) => listeners[type]!.push(listener),
    };
    serveCommands(
      ws,
      "test agent",
      async (method) => ({ method }),
      () => {},
    );
    for (const l of listeners.open!) l({ data: undefined });
    const message = (data: string) => {
      for (const l of listeners.message!) l({ data });
    };
    message(PONG_FRAME);
    message(JSON.stringify({ id: 1, method: "computer.url", params: {} }));
    message(JSON.stringify({ id: 2, method: "computer.read", params: {} }));
    await new Promise((resolve) => setTimeout(resolve, 10));
    for (const l of listeners.close!) l({ data: undefined });
    expect(sent.map((f) => JSON.parse(f))).toEqual([
      { type: "event", method: "computer.ready", params: { user_agent: "test agent" } },
      { type: "success", id: 1, result: { method: "computer.url" } },
      { type: "success", id: 2, result: { method: "computer.read" } },
    ]);
  });

  it("stops after 4001 or 4003 (another client took over, or the server ended it), else backs off with jitter", () => {
    expect(afterClose({ code: CLOSE.replaced, reason: "replaced" }, 0).reconnectInMs).toBeNull();
    expect(afterClose({ code: CLOSE.ended, reason: "" }, 3).reconnectInMs).toBeNull();
    const first = afterClose({ code: 1006, reason: "" }, 0);
    expect(first.reconnectInMs).toBeGreaterThanOrEqual(375);
    expect(first.reconnectInMs).toBeLessThanOrEqual(625);
    expect(first.line).toMatch(/^disconnected \(1006\); reconnecting in \d+ ms$/);
    expect(afterClose({ code: 1006, reason: "" }, 20).reconnectInMs).toBeLessThanOrEqual(37_500);
  });
});
