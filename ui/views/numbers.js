// a probability (0..1) as a percent, by the rule of ui/numbers.py format_percent (tests/test_numbers.py checks the two
// agree on one table): three significant digits in plain decimals, never "7.6e-05%"; below one in a million
// "<0.0001%"; a tiny probability never reads as 0% nor one just under 1 as 100%
const PERCENT_FLOOR_P = 1e-6; // one in a million: a probability below it reads "<0.0001%"

function plainDigits(x, digits) {
  const decimals = Math.max(0, digits - 1 - Math.floor(Math.log10(x)));
  let text = x.toFixed(decimals);
  if (text.includes(".")) text = text.replace(/0+$/, "").replace(/\.$/, "");
  return text;
}

function formatPercent(p) {
  if (!(p > 0)) return "0%";
  const percent = p * 100;
  if (p < PERCENT_FLOOR_P) return "<" + plainDigits(PERCENT_FLOOR_P * 100, 1) + "%";
  let digits = 3;
  let text = plainDigits(percent, digits);
  while (p < 1 && text === "100" && digits < 12) {
    digits += 1;
    text = plainDigits(percent, digits);
  }
  return text + "%";
}
