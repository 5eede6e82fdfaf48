//! Text into search terms: the words of a name, a description or a request, lowercased,
//! without the little words every request has, stemmed (English Snowball: `reading`, `reads`
//! and `read` are one term). Names are split where their words meet: `get-sum`,
//! `read_text_file`, `everything__echo`, `getTinyImage`.

use rust_stemmers::{Algorithm, Stemmer};

/// Words that say nothing about which tool is meant: articles, pronouns, auxiliaries and the
/// politeness of a request ("can you please … for me"). A term in almost every request would
/// only add noise to every score.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "could", "do", "does", "for",
    "from", "give", "have", "how", "i", "i'd", "i'm", "if", "in", "into", "is", "it", "its", "let",
    "me", "my", "need", "of", "on", "or", "our", "please", "should", "some", "that", "the",
    "their", "them", "then", "there", "these", "this", "those", "to", "us", "want", "was", "we",
    "what", "when", "which", "while", "who", "will", "with", "would", "you", "your",
];

/// The words people use for an action next to the words tool descriptions use for it: a
/// request's word adds these terms to the query (never to a tool's text). General computing
/// vocabulary only, no tool's name: "folder" is what a user says, "directory" what a tool's
/// description says; "remove" and "delete", "rename" and "move", "run" and "execute".
const SYNONYMS: &[(&str, &[&str])] = &[
    ("folder", &["directory"]),
    ("dir", &["directory"]),
    ("find", &["search"]),
    ("look", &["search"]),
    ("google", &["search", "web"]),
    ("internet", &["web"]),
    ("online", &["web"]),
    ("website", &["web", "page"]),
    ("webpage", &["web", "page"]),
    ("download", &["fetch"]),
    ("remove", &["delete"]),
    ("erase", &["delete"]),
    ("rename", &["move"]),
    ("run", &["execute", "command"]),
    ("launch", &["execute"]),
    ("stop", &["kill"]),
    ("terminate", &["kill"]),
    ("show", &["read", "list"]),
    ("open", &["read"]),
    ("view", &["read"]),
    ("save", &["write"]),
    ("change", &["edit"]),
    ("modify", &["edit"]),
    ("make", &["create"]),
    ("new", &["create"]),
    ("duplicate", &["copy"]),
    ("revert", &["undo"]),
    ("add", &["sum"]),
    ("total", &["sum"]),
    ("print", &["output"]),
    ("mention", &["contents", "search"]),
    ("contain", &["contents", "search"]),
];

/// Turns text into terms; holds the stemmer (built once per search).
pub(crate) struct Terms {
    stemmer: Stemmer,
}

impl Terms {
    pub(crate) fn new() -> Self {
        Self {
            stemmer: Stemmer::create(Algorithm::English),
        }
    }

    /// A request's terms: [`Terms::of`], each word followed by the terms of its synonyms.
    pub(crate) fn of_request(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for word in words(text) {
            if STOP_WORDS.contains(&word.as_str()) {
                continue;
            }
            let stem = self.stemmer.stem(&word).into_owned();
            let same = SYNONYMS
                .iter()
                .filter(|(said, _)| *said == word || self.stemmer.stem(said) == stem.as_str())
                .flat_map(|(_, means)| means.iter());
            let extra: Vec<String> = same.map(|w| self.stemmer.stem(w).into_owned()).collect();
            out.push(stem);
            out.extend(extra);
        }
        out
    }

    /// The terms of `text`, in order, repeats kept (term frequency counts them).
    pub(crate) fn of(&self, text: &str) -> Vec<String> {
        words(text)
            .into_iter()
            .filter(|w| !STOP_WORDS.contains(&w.as_str()))
            .map(|w| self.stemmer.stem(&w).into_owned())
            .collect()
    }
}

/// The lowercase words of `text`: runs of letters and digits, split again where a lowercase
/// letter meets an uppercase one (`getTinyImage` → get, tiny, image).
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous_lower && !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
            word.extend(c.to_lowercase());
        } else {
            previous_lower = false;
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_where_their_words_meet() {
        assert_eq!(words("everything__get-sum"), ["everything", "get", "sum"]);
        assert_eq!(words("read_text_file"), ["read", "text", "file"]);
        assert_eq!(words("getTinyImage"), ["get", "tiny", "image"]);
        assert_eq!(words("  URL, http2!"), ["url", "http2"]);
    }

    #[test]
    fn a_request_says_it_in_the_tools_words_too() {
        let terms = Terms::new();
        assert_eq!(
            terms.of_request("remove folders"),
            ["remov", "delet", "folder", "directori"]
        );
        assert_eq!(terms.of_request("read it"), ["read"]);
    }

    #[test]
    fn terms_are_stemmed_without_stop_words() {
        let terms = Terms::new();
        assert_eq!(
            terms.of("Can you please read the files for me"),
            ["read", "file"]
        );
        assert_eq!(terms.of("reading reads"), ["read", "read"]);
        assert!(terms.of("the of to").is_empty());
    }
}
