import { type ToolSet, tool } from "ai";
import type { z } from "zod";
import { type CommandOutcome, METHODS, type Method, PARAMS } from "../../durable-objects/protocol";
import type { Scope } from "../auth/scopes";

/**
 * The browser-session flag: a turn that may drive the user's browser. Only the ask
 * service opens one (adding `svc:computer` to that turn's scopes, never to the caller's
 * token), and only such a turn can obtain the computer tools.
 */
export type BrowserTurn = {
  readonly browserSession: true;
  readonly scopes: ReadonlySet<Scope>;
};

/** Runs one command on the user's browser (the BrowserSession object). */
export type CommandRunner = (method: Method, params: Record<string, unknown>) => Promise<CommandOutcome>;

/** Thrown by a tool whose browser command failed; the ask service ends the turn on it. */
export class BrowserCommandError extends Error {
  constructor(
    readonly method: Method,
    readonly outcome: Extract<CommandOutcome, { ok: false }>,
  ) {
    super(`${method} failed: ${outcome.error}: ${outcome.message}`);
  }
}

/** Longest page text handed to the model from one `computer_read`. */
export const READ_TEXT_LIMIT = 50_000;

const DESCRIPTIONS: Record<Method, string> = {
  "computer.screenshot": "Capture the visible part of the current page as a PNG image.",
  "computer.navigate": "Open an http(s) URL in the current tab and wait for it to load.",
  "computer.click": "Click at the given viewport coordinates (CSS pixels from the top-left corner).",
  "computer.type": "Type text into the focused element, as keystrokes.",
  "computer.key": "Press one key or chord, e.g. Enter, Tab, Escape, ArrowDown, Control+A.",
  "computer.scroll": "Scroll by dx, dy pixels with the pointer at x, y.",
  "computer.url": "Get the current page's URL and title.",
  "computer.read": "Get the visible text of the current page.",
};

/** `computer.read` → `computer_read`: the model-facing tool names. */
export const toolName = (m: Method) => m.replace(".", "_") as `computer_${string}`;

/** The computer tools, and nothing else: the only tools a browser turn offers. */
export function computerTools(turn: BrowserTurn, run: CommandRunner): ToolSet {
  if (turn.browserSession !== true || !turn.scopes.has("svc:computer")) {
    throw new Error("computer tools require a browser-session turn holding svc:computer");
  }
  const call = async (method: Method, params: Record<string, unknown>) => {
    const outcome = await run(method, params);
    if (!outcome.ok) throw new BrowserCommandError(method, outcome);
    return outcome.result;
  };

  const tools: ToolSet = {};
  for (const method of METHODS) {
    const inputSchema = PARAMS[method] as z.ZodType<Record<string, unknown>>;
    if (method === "computer.screenshot") {
      tools[toolName(method)] = tool({
        description: DESCRIPTIONS[method],
        inputSchema,
        execute: async (input) => (await call(method, input)) as { data: string },
        toModelOutput: ({ output }) => ({
          type: "content",
          value: [{ type: "file", mediaType: "image/png", data: { type: "data", data: output.data } }],
        }),
      });
    } else if (method === "computer.read") {
      tools[toolName(method)] = tool({
        description: DESCRIPTIONS[method],
        inputSchema,
        execute: async (input) => {
          const { text } = (await call(method, input)) as { text: string };
          return text.length > READ_TEXT_LIMIT
            ? { text: text.slice(0, READ_TEXT_LIMIT), truncated: true }
            : { text, truncated: false };
        },
      });
    } else {
      tools[toolName(method)] = tool({
        description: DESCRIPTIONS[method],
        inputSchema,
        execute: async (input) => ({ ok: true, ...(await call(method, input)) }),
      });
    }
  }
  return tools;
}
