/**
 * Runs one `computer.*` command in the agent's tab through the Chrome DevTools Protocol, with
 * the results the reference bridge gives (durable-objects/protocol.ts).
 */
import { LIMITS, type Method, type Params } from "../../durable-objects/protocol";
import { attach, detach, evaluate, nextEvent, send } from "./cdp";
import { keyDefinition, MODIFIERS, parseChord } from "./keys";
import { agentTab, allowedUrl, forgetAgentTab, NotAllowedError, refusedPage } from "./tabs";

/** Leave the server's per-command timeout (30 s) room to receive a navigation failure. */
const NAVIGATION_TIMEOUT_MS = 25_000;

export async function runCommand(method: Method, params: Params<Method>): Promise<Record<string, unknown>> {
  if (method === "computer.navigate") {
    const { url } = params as Params<"computer.navigate">;
    if (!allowedUrl(url)) throw new NotAllowedError(`the agent may not open ${refusedPage(url)}`);
  }
  const tab = await agentTab();
  const tabId = tab.id;
  await attach(tabId);
  switch (method) {
    case "computer.screenshot": {
      // A tab that is not the selected one of its window is not painted, and could not be captured.
      if (!tab.active) await chrome.tabs.update(tabId, { active: true });
      const { data } = await send<{ data: string }>(tabId, "Page.captureScreenshot", { format: "png" });
      return { data };
    }
    case "computer.navigate":
      return navigate(tabId, (params as Params<"computer.navigate">).url);
    case "computer.click": {
      const { x, y } = params as Params<"computer.click">;
      await mouse(tabId, { type: "mouseMoved", x, y });
      await mouse(tabId, { type: "mousePressed", x, y, button: "left", buttons: 1, clickCount: 1 });
      await mouse(tabId, { type: "mouseReleased", x, y, button: "left", buttons: 0, clickCount: 1 });
      return {};
    }
    case "computer.type":
      for (const char of (params as Params<"computer.type">).text) await press(tabId, TYPED_KEYS[char] ?? char);
      return {};
    case "computer.key":
      await press(tabId, (params as Params<"computer.key">).key);
      return {};
    case "computer.scroll": {
      const { x, y, dx, dy } = params as Params<"computer.scroll">;
      await mouse(tabId, { type: "mouseMoved", x, y });
      await mouse(tabId, { type: "mouseWheel", x, y, deltaX: dx, deltaY: dy });
      return {};
    }
    case "computer.url":
      return page(tabId);
    case "computer.read": {
      // innerText, not textContent: the agent should read what a person sees (no scripts, styles or hidden nodes).
      const text = await evaluate<string>(tabId, 'document.body ? document.body.innerText : ""');
      return { text: text.slice(0, LIMITS.maxTextChars) };
    }
    default:
      throw new Error(`unknown method ${method satisfies never}`);
  }
}

/** Characters typed as the key that makes them, as Playwright's `keyboard.type` does. */
const TYPED_KEYS: Record<string, string> = { "\n": "Enter", "\r": "Enter", "\t": "Tab" };

const mouse = (tabId: number, event: object) => send(tabId, "Input.dispatchMouseEvent", event);

async function page(tabId: number): Promise<{ url: string; title: string }> {
  const { url, title } = await evaluate<{ url: string; title: string }>(
    tabId,
    "({ url: location.href, title: document.title })",
  );
  return { url, title: title.slice(0, LIMITS.maxTextChars) };
}

/** Opens `url` in the tab and waits for its load event, like the bridge's `page.goto(url, { waitUntil: "load" })`. */
async function navigate(tabId: number, url: string) {
  await send(tabId, "Page.enable");
  let committed = false;
  // Listening before navigating; a load event of the page being left (before the commit) does not count.
  const load = nextEvent(tabId, "Page.loadEventFired", () => committed);
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const reply = await send<{ loaderId?: string; errorText?: string }>(tabId, "Page.navigate", { url });
    if (reply.errorText) throw new Error(`${reply.errorText} at ${url}`);
    committed = true;
    // No loader: a same-document navigation (a #fragment), which fires no load event.
    if (reply.loaderId) {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const error = new Error(`navigating to ${url} did not finish loading in ${NAVIGATION_TIMEOUT_MS} ms`);
          error.name = "TimeoutError";
          reject(error);
        }, NAVIGATION_TIMEOUT_MS);
      });
      await Promise.race([load.event, timeout]);
    }
  } finally {
    clearTimeout(timer);
    load.dispose();
  }
  const landed = await page(tabId);
  if (!allowedUrl(landed.url)) {
    // Redirected somewhere the extension never acts: let go of the tab rather than read it.
    await detach(tabId);
    await forgetAgentTab();
    throw new NotAllowedError(`${url} led to ${refusedPage(landed.url)}, which the extension never touches`);
  }
  return landed;
}

/** Presses a key or chord (modifiers down, key down and up, modifiers up), as Playwright's `keyboard.press`. */
async function press(tabId: number, chord: string) {
  const { modifiers, key } = parseChord(chord);
  const shift = modifiers.includes("Shift");
  const definition = keyDefinition(key, shift);
  let bits = 0;
  for (const m of modifiers) {
    bits |= MODIFIERS[m]!;
    const d = keyDefinition(m);
    await send(tabId, "Input.dispatchKeyEvent", keyEvent("rawKeyDown", d, bits));
  }
  // Text only when no modifier other than Shift is held: Control+A selects, it does not type "a".
  const text = bits & ~MODIFIERS.Shift! ? undefined : definition.text;
  await send(tabId, "Input.dispatchKeyEvent", keyEvent(text ? "keyDown" : "rawKeyDown", definition, bits, text));
  await send(tabId, "Input.dispatchKeyEvent", keyEvent("keyUp", definition, bits));
  for (const m of modifiers.toReversed()) {
    bits &= ~MODIFIERS[m]!;
    await send(tabId, "Input.dispatchKeyEvent", keyEvent("keyUp", keyDefinition(m), bits));
  }
}

function keyEvent(type: string, d: ReturnType<typeof keyDefinition>, modifiers: number, text?: string) {
  return {
    type,
    modifiers,
    key: d.key,
    code: d.code,
    windowsVirtualKeyCode: d.keyCode,
    location: d.location ?? 0,
    ...(text ? { text, unmodifiedText: text } : {}),
  };
}
