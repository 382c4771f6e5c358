// JSON shown formatted (components/session/JsonSwitch.svelte, JsonTree.svelte).

/** Above this many characters of JSON, the formatted view is indented text, not a tree. */
export const MOST_TREE_CHARS = 200_000;
