// presenter mode: PageDown / PageUp anywhere on the page move to the next / previous section (one rerun each)
export default function (component) {
  const { setTriggerValue, parentElement } = component;
  if (parentElement.__skCleanup) parentElement.__skCleanup();
  const onKey = (event) => {
    const by = { PageDown: 1, PageUp: -1 }[event.key];
    // a one-line box has no use for PageDown (a teacher who typed a question and pressed Enter is still in it);
    // a multi-line text keeps its own, and so does an open list of options
    if (!by || event.target.closest("textarea, [contenteditable='true'], [role='listbox']")) return;
    event.preventDefault();
    setTriggerValue("move", by);
  };
  document.addEventListener("keydown", onKey);
  // a mark on the page that the keys are heard (a key pressed before this script ran is lost)
  document.documentElement.dataset.sectionKeys = "on";
  const cleanup = () => {
    document.removeEventListener("keydown", onKey);
    delete document.documentElement.dataset.sectionKeys;
  };
  parentElement.__skCleanup = cleanup;
  return cleanup;
}
