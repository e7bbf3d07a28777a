// Writes reference.json: texts and their o200k_base token counts from
// tiktoken itself (the npm "tiktoken" package is OpenAI's Rust tiktoken
// built to WebAssembly), for tokens.TestCountMatchesTiktoken.
//
//   npm install tiktoken@1.0.22 && node tokens/testdata/reference.cjs > tokens/testdata/reference.json
const { get_encoding } = require("tiktoken");
const enc = get_encoding("o200k_base");

const fixed = [
  "hello world", "The quick brown fox jumps over the lazy dog.",
  // Whitespace: the look-ahead alternative and line breaks.
  "a  b", "a   b", "a \t b", "a   \n  b", "  x", "  1", "   !", "\t\t\tx", "x  ", "x \n", "\n\n\nx",
  " \n \n", "\r\n\r\n  foo", "\u00a0\u00a0x", "\u3000\u3000x", "a\u2003\u2003b", "  \u0085x", "\v\fx",
  // Contractions and case.
  "I'm", "DON'T", "you'LL", "We'Ve", "it’s", "O'Neil's", "HelloWORLDFoo", "ǅungla ǈ", "ſ'ſ", "'s'S",
  // Numbers and symbols.
  "12345678", "1,234.56", "3.14159e-10", "v1.2.3-rc.1", "$100.00!!!", "// comment\n", "a/b/c\n/d", "!!!\n\n/",
  "<|endoftext|>", "<|endofprompt|> x", "😀😃😄 🙂", "👩‍👩‍👧‍👦", "e\u0301te\u0301", "\u0301\u0301a",
  // Scripts.
  "日本語のテキストです。", "中文分词测试，标点符号！", "한국어 문장입니다", "Привет, мир! Как дела?",
  "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีครับ", "Ελληνικά γράμματα", "Tiếng Việt có dấu",
  // Code, data, markup.
  'func main() {\n\tfmt.Println("hi")\n}\n', '{"a": [1, 2, {"b": null}], "c": "d"}',
  "## Step\n\nFetch the rows for the ISO week, then summarise them in a table.\n\n",
  "| a | b |\n|---|---|\n| 1 | 2 |\n", "https://example.com/path?q=1&r=two#frag",
  "SGVsbG8gV29ybGQhIFRoaXMgaXMgYmFzZTY0IGVuY29kZWQgdGV4dC4=", "\uFFFD", "a\uFFFDb",
  // Long pieces (the heap merge).
  "a".repeat(1000), "ab".repeat(600), "🙂".repeat(200), "!".repeat(500), " ".repeat(300) + "x",
  "1".repeat(301), "abcdefghij".repeat(100), "Zz".repeat(700), "-".repeat(129), "x".repeat(127), "x".repeat(128),
];

// A seeded generator, so the file is the same each time.
let seed = 20261130;
function rnd(n) {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed % n;
}
const alphabet = [
  ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
  ..."     \t\n\r'\"!?.,;:-_/\\()[]{}<>@#$%^&*+=|~`",
  "'s", "'T", "'ll", "’", "é", "ß", "Ω", "ж", "中", "文", "の", "ア", "한", "ع", "ש", "ह", "ก", "😀", "👍🏽",
  "\u00a0", "\u2009", "\u3000", "\u0301", "\u200d", "ǅ", "Ⅻ", "½", "٣", "\u0085", "\v", "\f",
];
const random = [];
for (let i = 0; i < 400; i++) {
  const len = 1 + rnd(i < 380 ? 120 : 3000);
  let s = "";
  for (let j = 0; j < len; j++) s += alphabet[rnd(alphabet.length)];
  random.push(s);
}

const cases = [...fixed, ...random].map((text) => ({ text, count: enc.encode_ordinary(text).length }));
process.stdout.write(JSON.stringify(cases, null, 0).replace(/\},\{/g, "},\n{") + "\n");
enc.free();
