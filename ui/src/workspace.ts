// The workspace in the top bar: the open folder, and a switcher listing the recent workspaces and
// "Open folder…" (the native picker).

import { button, el, errorBox } from "./elements";
import type { CommandError, WorkspaceInfo } from "./types";
import type { Loaded } from "./view";

export interface WorkspaceMenu {
  recent: Loaded<string[]>;
  /** Why the last switch failed. */
  error: CommandError | null;
}

export interface WorkspaceActions {
  /** Opens (`true`) or closes the switcher's menu. */
  toggleWorkspaceMenu(open: boolean): void;
  openWorkspace(path: string): void;
  pickWorkspace(): void;
}

export function workspaceSwitcher(
  workspace: Loaded<WorkspaceInfo>,
  menu: WorkspaceMenu | null,
  actions: WorkspaceActions,
): HTMLElement {
  let where: Node;
  switch (workspace.kind) {
    case "ok":
      where = el(
        "span",
        { class: "workspace-box", title: `${workspace.value.root}\nSessions folder: ${workspace.value.sessions_dir}` },
        el("code", { class: "workspace-path" }, workspace.value.root),
      );
      break;
    case "loading":
      where = el("span", { class: "muted" }, "opening…");
      break;
    case "error":
      where = el("span", { class: "muted" }, "not open");
      break;
  }
  const toggle = button(
    {
      class: "workspace-switcher",
      title: "Switch workspace",
      attrs: { id: "workspace-switcher", "aria-haspopup": "menu", "aria-expanded": String(menu !== null) },
    },
    el("span", { class: "workspace-label" }, "Workspace"),
    () => actions.toggleWorkspaceMenu(menu === null),
  );
  toggle.append(where, el("span", { class: "caret", attrs: { "aria-hidden": "true" } }, "▾"));
  const element = el("div", { class: "workspace" }, toggle);
  if (menu) element.append(menuElement(workspace, menu, actions));
  return element;
}

function menuElement(workspace: Loaded<WorkspaceInfo>, menu: WorkspaceMenu, actions: WorkspaceActions): HTMLElement {
  const current = workspace.kind === "ok" ? workspace.value.root : null;
  let recent: Node[];
  switch (menu.recent.kind) {
    case "loading":
      recent = [el("p", { class: "menu-note muted" }, "Reading…")];
      break;
    case "error":
      recent = [errorBox("The recent workspaces could not be read", menu.recent.error)];
      break;
    case "ok":
      recent =
        menu.recent.value.length === 0
          ? [el("p", { class: "menu-note muted" }, "No recent workspaces.")]
          : menu.recent.value.map((path) => {
              const item = button(
                {
                  class: path === current ? "recent-workspace current" : "recent-workspace",
                  title: path,
                  attrs: { "data-path": path, role: "menuitem", "aria-current": String(path === current) },
                },
                el("span", { class: "recent-name" }, baseName(path)),
                () => actions.openWorkspace(path),
              );
              item.append(el("code", { class: "recent-path muted" }, path));
              return item;
            });
  }
  const menuBox = el(
    "div",
    { class: "workspace-menu", attrs: { role: "menu", "aria-label": "Workspaces" } },
    el("p", { class: "menu-title" }, "Recent workspaces"),
    ...recent,
    el("div", { class: "menu-rule" }),
    button({ class: "menu-action", attrs: { id: "workspace-open-folder", role: "menuitem" } }, "Open folder…", () =>
      actions.pickWorkspace(),
    ),
    menu.error && errorBox("The workspace could not be opened", menu.error),
  );
  menuBox.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      actions.toggleWorkspaceMenu(false);
    }
  });
  return menuBox;
}

/** The last part of a path ("/home/me/project" → "project"). */
export function baseName(path: string): string {
  const parts = path.split(/[\\/]/).filter((part) => part !== "");
  return parts[parts.length - 1] ?? path;
}
