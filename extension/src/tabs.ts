/**
 * The agent acts in one tab it opened itself, kept in a tab group named "Agent" (in a window of
 * its own, so the user's windows are left alone). It never acts in any other tab: a tab the
 * user moved out of the group, or one showing a page the extension must not touch, is no
 * longer the agent's.
 */

/** A refused command: answered with an error frame and not run. */
export class NotAllowedError extends Error {
  override name = "NotAllowedError";
}

export const GROUP_TITLE = "Agent";

type AgentTab = { tabId: number; groupId: number };

/** The Chrome Web Store: Chrome keeps extensions off it, and the agent must not install anything. */
const WEB_STORE = [
  (u: URL) => u.hostname === "chromewebstore.google.com",
  (u: URL) => u.hostname === "chrome.google.com" && /^\/webstore(\/|$)/.test(u.pathname),
];

/**
 * Pages the agent may act on: http(s) pages other than the web store, and the blank page a new
 * agent tab starts on. Not chrome://, chrome-extension://, devtools://, file:// (the user's own
 * files), view-source:, data: or any other scheme.
 */
export function allowedUrl(raw: string): boolean {
  if (raw === "about:blank") return true;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return false;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return false;
  return !WEB_STORE.some((matches) => matches(url));
}

/** Why a page is refused, without echoing its whole address. */
export function refusedPage(raw: string): string {
  try {
    const url = new URL(raw);
    return url.protocol === "http:" || url.protocol === "https:"
      ? `${url.origin} (the web store)`
      : `a ${url.protocol}// page`;
  } catch {
    return "a page that is not a web page";
  }
}

const STORE_KEY = "agent_tab";

async function remembered(): Promise<AgentTab | null> {
  const { [STORE_KEY]: value } = await chrome.storage.session.get(STORE_KEY);
  return value && typeof value === "object" && "tabId" in value ? (value as AgentTab) : null;
}

const remember = (tab: AgentTab) => chrome.storage.session.set({ [STORE_KEY]: tab });
export const forgetAgentTab = () => chrome.storage.session.remove(STORE_KEY);

/**
 * The id of the agent's tab, opening one (in the Agent group) when there is none or the user
 * closed it. Throws NotAllowedError when the tab the agent was using is no longer its own.
 */
export async function agentTab(): Promise<chrome.tabs.Tab & { id: number }> {
  const known = await remembered();
  const tab = known ? await chrome.tabs.get(known.tabId).catch(() => null) : null;
  if (known && tab?.id !== undefined) {
    if (tab.groupId !== known.groupId) {
      await forgetAgentTab();
      throw new NotAllowedError(
        "the agent's tab was moved out of the Agent tab group, so it is the user's now and the extension does not act in it; the next command opens a new agent tab",
      );
    }
    const url = tab.pendingUrl ?? tab.url ?? "";
    if (!allowedUrl(url)) {
      await forgetAgentTab();
      throw new NotAllowedError(
        `the agent's tab shows ${refusedPage(url)}, which the extension never touches; the next command opens a new agent tab`,
      );
    }
    return { ...tab, id: tab.id };
  }
  return openAgentTab(known?.groupId);
}

/** A new blank tab in the Agent group: the existing group if it is still there, else a new window. */
async function openAgentTab(groupId: number | undefined): Promise<chrome.tabs.Tab & { id: number }> {
  const group = groupId === undefined ? null : await chrome.tabGroups.get(groupId).catch(() => null);
  let tab: chrome.tabs.Tab | undefined;
  if (group) {
    tab = await chrome.tabs.create({ windowId: group.windowId, url: "about:blank", active: true });
  } else {
    const window = await chrome.windows.create({ url: "about:blank", focused: false });
    tab = window?.tabs?.[0];
  }
  if (tab?.id === undefined) throw new Error("could not open a tab for the agent");
  const id = group
    ? await chrome.tabs.group({ groupId: group.id, tabIds: tab.id })
    : await chrome.tabs.group({ tabIds: tab.id, createProperties: { windowId: tab.windowId } });
  if (!group) await chrome.tabGroups.update(id, { title: GROUP_TITLE, color: "blue" });
  await remember({ tabId: tab.id, groupId: id });
  return { ...tab, id: tab.id, groupId: id };
}
