/**
 * The service worker: keeps the connection the user asked for in the options page (across
 * restarts of the worker), runs the service's commands in the agent's tab, and shows the state
 * on the toolbar badge. The token is never logged.
 */
import { z } from "zod";
import { runCommand } from "./commands";
import { isPat, serviceOrigin } from "./settings";
import { type Connection, openConnection } from "./socket";
import { type ConnectionState, loadSettings, saveState, setEnabled } from "./storage";

// Extension pages forbid eval; zod would otherwise try (and log a CSP violation) to compile its parsers.
z.config({ jitless: true });

const log = (line: string) => console.info(`[agent-browser] ${line}`);

const BADGE: Record<ConnectionState["status"], { text: string; color: string }> = {
  connected: { text: "on", color: "#1a7f37" },
  connecting: { text: "…", color: "#9a6700" },
  disconnected: { text: "off", color: "#6e7781" },
};

function showState(state: ConnectionState) {
  void saveState(state);
  const badge = BADGE[state.status];
  void chrome.action.setBadgeText({ text: badge.text });
  void chrome.action.setBadgeBackgroundColor({ color: badge.color });
  void chrome.action.setTitle({ title: `Agent browser: ${state.reason ?? state.status}` });
}

let connection: Connection | null = null;

/** Connects with the saved settings if the user asked for a connection; returns why not otherwise. */
async function resume(): Promise<string | null> {
  connection?.stop();
  connection = null;
  const settings = await loadSettings();
  if (!settings.enabled) return "not enabled";
  const origin = serviceOrigin(settings.serviceUrl);
  if (!origin || !isPat(settings.token)) {
    await setEnabled(false);
    showState({ status: "disconnected", reason: "set the service URL and token in the options" });
    return "no settings";
  }
  connection = openConnection({
    serviceUrl: origin,
    token: settings.token,
    run: runCommand,
    log,
    onState: (state) => {
      // The server replaced or ended this connection: stay off until the user connects again.
      if (state.status === "disconnected") void setEnabled(false);
      showState(state);
    },
  });
  return null;
}

async function disconnect() {
  await setEnabled(false);
  connection?.stop();
  connection = null;
  log("disconnected by the user");
  showState({ status: "disconnected" });
}

// One action at a time: a message may wake the worker while it is still resuming.
let actions: Promise<unknown> = Promise.resolve();
const serially = <T>(action: () => Promise<T>): Promise<T> => {
  const next = actions.then(action);
  actions = next.catch(() => {});
  return next;
};

type Message = { type: "connect" } | { type: "disconnect" };

chrome.runtime.onMessage.addListener((message: Message, sender, sendResponse) => {
  if (sender.id !== chrome.runtime.id) return false;
  if (message?.type === "connect") {
    void serially(async () => {
      await setEnabled(true);
      return resume();
    }).then((why) => sendResponse({ ok: why === null }));
    return true;
  }
  if (message?.type === "disconnect") {
    void serially(disconnect).then(() => sendResponse({ ok: true }));
    return true;
  }
  return false;
});

chrome.runtime.onInstalled.addListener(({ reason }) => {
  if (reason === chrome.runtime.OnInstalledReason.INSTALL) void chrome.runtime.openOptionsPage();
});

// Every start of the worker (browser start, install, or any event after it was stopped).
void serially(async () => {
  if ((await resume()) === "not enabled") {
    const { state } = await chrome.storage.session.get("state");
    if (!state) showState({ status: "disconnected" });
  }
});
