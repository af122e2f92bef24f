/** chrome.debugger (the Chrome DevTools Protocol) on one tab. */

const PROTOCOL_VERSION = "1.3";
const attached = new Set<number>();

chrome.debugger.onDetach.addListener((source) => {
  if (source.tabId !== undefined) attached.delete(source.tabId);
});

export async function attach(tabId: number): Promise<void> {
  if (attached.has(tabId)) return;
  try {
    await chrome.debugger.attach({ tabId }, PROTOCOL_VERSION);
  } catch (e) {
    // A service worker that was stopped and started again forgets what it had attached.
    if (!String(e instanceof Error ? e.message : e).includes("already attached")) throw e;
  }
  attached.add(tabId);
}

export async function detach(tabId: number): Promise<void> {
  attached.delete(tabId);
  await chrome.debugger.detach({ tabId }).catch(() => {});
}

export const send = <T = Record<string, unknown>>(tabId: number, method: string, params?: object): Promise<T> =>
  chrome.debugger.sendCommand({ tabId }, method, params) as Promise<T>;

/** Resolves on the next `method` event of the tab for which `accept()` is true at that moment. */
export function nextEvent(tabId: number, method: string, accept: () => boolean = () => true) {
  let listener: (source: chrome.debugger.Debuggee, name: string) => void = () => {};
  const event = new Promise<void>((resolve) => {
    listener = (source, name) => {
      if (source.tabId === tabId && name === method && accept()) resolve();
    };
    chrome.debugger.onEvent.addListener(listener);
  });
  return { event, dispose: () => chrome.debugger.onEvent.removeListener(listener) };
}

type EvaluateReply<T> = {
  result: { value?: T };
  exceptionDetails?: { text: string; exception?: { description?: string } };
};

/** Evaluates an expression in the page and returns its value. */
export async function evaluate<T>(tabId: number, expression: string): Promise<T> {
  const reply = await send<EvaluateReply<T>>(tabId, "Runtime.evaluate", { expression, returnByValue: true });
  if (reply.exceptionDetails) {
    throw new Error(reply.exceptionDetails.exception?.description ?? reply.exceptionDetails.text);
  }
  return reply.result.value as T;
}
