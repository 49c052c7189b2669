//! PURE. The vLLM engine arguments of a container, read from its command and args:
//! `vllm serve MODEL --flag value --flag=value --bool-flag`, the older
//! `python -m vllm.entrypoints.openai.api_server --model MODEL …`, and either of them inside a
//! `sh -c "…"` script.

/// Boolean flags of `vllm serve` that take no value. A value after them is only read when it is
/// literally `true` or `false`, so `--enforce-eager MODEL` keeps MODEL positional.
const BOOLEAN_FLAGS: &[&str] = &[
    "enable-chunked-prefill",
    "enable-prefix-caching",
    "enforce-eager",
    "trust-remote-code",
    "disable-log-requests",
    "disable-log-stats",
    "enable-log-requests",
    "enable-lora",
    "enable-auto-tool-choice",
    "enable-expert-parallel",
    "enable-sleep-mode",
    "disable-custom-all-reduce",
    "disable-frontend-multiprocessing",
    "disable-sliding-window",
    "enable-prompt-tokens-details",
    "enable-server-load-tracking",
    "async-scheduling",
    "headless",
    "disable-fastapi-docs",
    "enable-force-include-usage",
    "skip-tokenizer-init",
];

/// The engine arguments kvtop's rules and views read, plus every flag as written.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct VllmArgs {
    /// True when a vLLM invocation was found in the container's command line.
    pub found: bool,
    /// The served model (`vllm serve MODEL` or `--model`).
    pub model: Option<String>,
    pub max_num_batched_tokens: Option<u64>,
    pub gpu_memory_utilization: Option<f64>,
    pub enable_chunked_prefill: Option<bool>,
    pub max_model_len: Option<u64>,
    pub tensor_parallel_size: Option<u32>,
    pub enable_prefix_caching: Option<bool>,
    pub max_num_seqs: Option<u64>,
    /// Every flag in order, named in snake_case without dashes (`max_num_batched_tokens`), with
    /// its value as written (`true` for a bare boolean flag, `false` for `--no-…`).
    pub flags: Vec<(String, String)>,
}

impl VllmArgs {
    /// Read the arguments from a container's `command` and `args` (either may be empty).
    pub fn parse(command: &[String], args: &[String]) -> VllmArgs {
        let argv: Vec<String> = command.iter().chain(args).cloned().collect();
        let argv = expand_shell(argv);
        let Some(start) = vllm_start(&argv) else {
            return VllmArgs::default();
        };
        let mut out = VllmArgs {
            found: true,
            ..VllmArgs::default()
        };
        let rest = argv.get(start..).unwrap_or_default();
        let mut i = 0;
        while let Some(word) = rest.get(i) {
            i += 1;
            if matches!(word.as_str(), "&&" | "||" | "|" | ";" | "\n") {
                break; // the next command of a script
            }
            let Some(flag) = word.strip_prefix("--") else {
                // The first positional of `vllm serve` is the model.
                if out.model.is_none() && !word.starts_with('-') {
                    out.model = Some(word.clone());
                }
                continue;
            };
            if flag.is_empty() {
                continue;
            }
            let (name, value) = match flag.split_once('=') {
                Some((name, value)) => (name.to_owned(), value.to_owned()),
                None => {
                    let next = rest.get(i);
                    let takes_value = if is_boolean(flag) {
                        next.is_some_and(|n| {
                            n.eq_ignore_ascii_case("true") || n.eq_ignore_ascii_case("false")
                        })
                    } else {
                        next.is_some_and(|n| !n.starts_with("--"))
                    };
                    match next.filter(|_| takes_value) {
                        Some(value) => {
                            i += 1;
                            (flag.to_owned(), value.clone())
                        }
                        None => (flag.to_owned(), "true".to_owned()),
                    }
                }
            };
            out.record(&name, value);
        }
        out
    }

    fn record(&mut self, dashed: &str, value: String) {
        let (dashed, value) = match dashed.strip_prefix("no-") {
            Some(positive) if is_boolean(positive) => (positive, "false".to_owned()),
            _ => (dashed, value),
        };
        let name = dashed.replace('-', "_");
        match name.as_str() {
            "model" => self.model = Some(value.clone()),
            "max_num_batched_tokens" => self.max_num_batched_tokens = parse_count(&value),
            "gpu_memory_utilization" => self.gpu_memory_utilization = value.parse().ok(),
            "enable_chunked_prefill" => self.enable_chunked_prefill = parse_bool(&value),
            "max_model_len" => self.max_model_len = parse_count(&value),
            "tensor_parallel_size" => {
                self.tensor_parallel_size = parse_count(&value).and_then(|n| u32::try_from(n).ok())
            }
            "enable_prefix_caching" => self.enable_prefix_caching = parse_bool(&value),
            "max_num_seqs" => self.max_num_seqs = parse_count(&value),
            _ => {}
        }
        // A repeated flag: the last one wins, as with argparse.
        self.flags.retain(|(n, _)| *n != name);
        self.flags.push((name, value));
    }
}

fn is_boolean(flag: &str) -> bool {
    BOOLEAN_FLAGS.contains(&flag)
}

fn parse_bool(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// A count as vLLM reads it: `16384`, `32k` (×1000), `32K` (×1024), `1m`/`1M`.
fn parse_count(value: &str) -> Option<u64> {
    let value = value.trim();
    let (digits, scale) = match value.char_indices().last() {
        Some((i, 'k')) => (value.get(..i)?, 1_000),
        Some((i, 'K')) => (value.get(..i)?, 1_024),
        Some((i, 'm')) => (value.get(..i)?, 1_000_000),
        Some((i, 'M')) => (value.get(..i)?, 1_048_576),
        _ => (value, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

/// Index of the first argument after the vLLM entry point (`vllm serve`, `-m vllm.…`).
fn vllm_start(argv: &[String]) -> Option<usize> {
    argv.iter().enumerate().find_map(|(i, word)| {
        let program = word.rsplit('/').next().unwrap_or(word);
        let next = argv.get(i + 1).map(String::as_str);
        if program == "vllm" && next == Some("serve") {
            Some(i + 2)
        } else if word.starts_with("vllm.entrypoints") {
            Some(i + 1)
        } else {
            None
        }
    })
}

/// Replace `sh -c SCRIPT` (any shell) by the words of the script.
pub(crate) fn expand_shell(argv: Vec<String>) -> Vec<String> {
    let is_shell = argv.first().is_some_and(|p| {
        let name = p.rsplit('/').next().unwrap_or(p);
        matches!(name, "sh" | "bash" | "dash" | "zsh" | "ash")
    });
    if !is_shell {
        return argv;
    }
    match argv
        .iter()
        .position(|w| w == "-c" || w == "-lc" || w == "-ec")
    {
        Some(at) => argv
            .get(at + 1)
            .map(|script| shell_words(script))
            .unwrap_or_default(),
        None => argv,
    }
}

/// Words of a shell script line: whitespace-separated, with single and double quotes and
/// backslash escapes; `&&`, `;` and newlines separate commands but are kept as words.
fn shell_words(script: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = script.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                match chars.next() {
                    // A line continuation.
                    Some('\n') | None => {}
                    Some(n) => {
                        word.push(n);
                        in_word = true;
                    }
                }
            }
            (None, c) if c.is_whitespace() || c == ';' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                if c == ';' || c == '\n' {
                    words.push(c.to_string());
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn vllm_serve_with_both_flag_forms() {
        let a = VllmArgs::parse(
            &words("vllm serve"),
            &words(
                "meta-llama/Llama-3.1-8B-Instruct --enable-chunked-prefill \
                 --max-num-batched-tokens 16384 --gpu-memory-utilization=0.92 \
                 --max-model-len=32k --tensor-parallel-size 2 --max-num-seqs 256 \
                 --enable-prefix-caching --port 8000",
            ),
        );
        assert!(a.found);
        assert_eq!(a.model.as_deref(), Some("meta-llama/Llama-3.1-8B-Instruct"));
        assert_eq!(a.enable_chunked_prefill, Some(true));
        assert_eq!(a.max_num_batched_tokens, Some(16_384));
        assert_eq!(a.gpu_memory_utilization, Some(0.92));
        assert_eq!(a.max_model_len, Some(32_000));
        assert_eq!(a.tensor_parallel_size, Some(2));
        assert_eq!(a.max_num_seqs, Some(256));
        assert_eq!(a.enable_prefix_caching, Some(true));
        assert!(a.flags.contains(&("port".to_owned(), "8000".to_owned())));
        assert!(
            a.flags
                .contains(&("enable_chunked_prefill".to_owned(), "true".to_owned()))
        );
    }

    #[test]
    fn a_boolean_flag_before_the_model_does_not_swallow_it() {
        let a = VllmArgs::parse(
            &[],
            &words("vllm serve --enforce-eager Qwen/Qwen2.5-7B-Instruct --max-model-len 32K"),
        );
        assert_eq!(a.model.as_deref(), Some("Qwen/Qwen2.5-7B-Instruct"));
        assert_eq!(a.max_model_len, Some(32_768));
    }

    #[test]
    fn negated_and_explicit_booleans() {
        let a = VllmArgs::parse(
            &words("/usr/local/bin/vllm serve m"),
            &words("--no-enable-prefix-caching --enable-chunked-prefill false"),
        );
        assert_eq!(a.enable_prefix_caching, Some(false));
        assert_eq!(a.enable_chunked_prefill, Some(false));
        assert_eq!(
            a.flags,
            vec![
                ("enable_prefix_caching".to_owned(), "false".to_owned()),
                ("enable_chunked_prefill".to_owned(), "false".to_owned()),
            ]
        );
    }

    #[test]
    fn python_module_entry_point_with_model_flag() {
        let a = VllmArgs::parse(
            &words("python3 -m vllm.entrypoints.openai.api_server"),
            &words("--model facebook/opt-125m --max-num-seqs=64"),
        );
        assert_eq!(a.model.as_deref(), Some("facebook/opt-125m"));
        assert_eq!(a.max_num_seqs, Some(64));
    }

    #[test]
    fn shell_scripts_are_split_into_words() {
        let command = words("/bin/sh -c");
        let script = vec![
            "pip list && vllm serve \"my org/model\" --max-num-batched-tokens 8192 \\\n \
             --gpu-memory-utilization '0.85'"
                .to_owned(),
        ];
        let a = VllmArgs::parse(&command, &script);
        assert_eq!(a.model.as_deref(), Some("my org/model"));
        assert_eq!(a.max_num_batched_tokens, Some(8_192));
        assert_eq!(a.gpu_memory_utilization, Some(0.85));
    }

    #[test]
    fn a_script_stops_at_the_next_command() {
        let script = vec!["vllm serve m --max-num-seqs 4; echo done && sleep 1".to_owned()];
        let a = VllmArgs::parse(&words("bash -c"), &script);
        assert_eq!(a.model.as_deref(), Some("m"));
        assert_eq!(a.flags.len(), 1);
    }

    #[test]
    fn no_vllm_invocation_is_not_found() {
        let a = VllmArgs::parse(&words("python serve.py"), &words("--port 8000"));
        assert!(!a.found);
        assert_eq!(a, VllmArgs::default());
    }

    #[test]
    fn unparseable_values_are_unknown_and_the_last_repeat_wins() {
        let a = VllmArgs::parse(
            &words("vllm serve m"),
            &words("--max-num-seqs lots --max-model-len 99999999999999999999k --max-num-seqs 8"),
        );
        assert_eq!(a.max_num_seqs, Some(8));
        assert_eq!(a.max_model_len, None);
        assert_eq!(
            a.flags.iter().filter(|(n, _)| n == "max_num_seqs").count(),
            1
        );
    }

    #[test]
    fn counts_read_like_vllm() {
        assert_eq!(parse_count("2048"), Some(2048));
        assert_eq!(parse_count("1k"), Some(1000));
        assert_eq!(parse_count("1K"), Some(1024));
        assert_eq!(parse_count("2m"), Some(2_000_000));
        assert_eq!(parse_count("k"), None);
        assert_eq!(parse_count(""), None);
        assert_eq!(parse_count("-5"), None);
    }
}
