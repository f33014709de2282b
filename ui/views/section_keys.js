// presenter mode: PageDown / PageUp anywhere on the page move to the next / previous section (one rerun each)
export default function (component) {
  const { setTriggerValue, parentElement } = component;
  if (parentElement.__skCleanup) parentElement.__skCleanup();
  const onKey = (event) => {
    const by = { PageDown: 1, PageUp: -1 }[event.key];
    if (!by || event.target.closest("textarea, input")) return;
    event.preventDefault();
    setTriggerValue("move", by);
  };
  document.addEventListener("keydown", onKey);
  const cleanup = () => document.removeEventListener("keydown", onKey);
  parentElement.__skCleanup = cleanup;
  return cleanup;
}
