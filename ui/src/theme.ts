// The colour theme: `<html data-theme="light|dark">`, or no attribute to follow the system
// (`prefers-color-scheme`). The choice is remembered in localStorage; the stylesheet reads only
// the attribute and the media query, so setting `document.documentElement.dataset.theme` is enough.

export type ThemeChoice = "system" | "light" | "dark";

export const THEME_KEY = "zibby-studio.theme";

export const THEME_CHOICES: readonly ThemeChoice[] = ["system", "light", "dark"];

function storage(): Storage | null {
  try {
    return typeof localStorage === "undefined" ? null : localStorage;
  } catch {
    return null;
  }
}

export function savedTheme(): ThemeChoice {
  const saved = storage()?.getItem(THEME_KEY);
  return saved === "light" || saved === "dark" ? saved : "system";
}

export function applyTheme(choice: ThemeChoice): void {
  const root = document.documentElement;
  if (choice === "system") delete root.dataset.theme;
  else root.dataset.theme = choice;
}

export function chooseTheme(choice: ThemeChoice): void {
  applyTheme(choice);
  const store = storage();
  if (choice === "system") store?.removeItem(THEME_KEY);
  else store?.setItem(THEME_KEY, choice);
}

/** The next choice of the top bar's toggle: system → light → dark → system. */
export function nextTheme(choice: ThemeChoice): ThemeChoice {
  return THEME_CHOICES[(THEME_CHOICES.indexOf(choice) + 1) % THEME_CHOICES.length]!;
}

/** The choice the page shows now (the attribute, set by us or by a test). */
export function currentTheme(): ThemeChoice {
  const theme = document.documentElement.dataset.theme;
  return theme === "light" || theme === "dark" ? theme : "system";
}
