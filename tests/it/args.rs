//! Bad arguments get an isError result that names the field, what was wrong, and what the tool
//! accepts; the tool never runs.

use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn a_missing_required_argument_is_named() {
    let (_d, root) = tempdir();
    let client = connect(&root).await;
    let message = err(&call(&client, "read_file", json!({})).await);
    assert!(
        message.contains("\"path\" is a required property"),
        "{message}"
    );
    assert!(
        message.contains("Allowed parameters: path (string, required)"),
        "{message}"
    );
}

#[tokio::test]
async fn a_wrong_type_names_the_field_and_the_expected_type() {
    let (_d, root) = tempdir();
    let client = connect(&root).await;
    let message = err(&call(&client, "read_file", json!({"path": 5, "limit": "ten"})).await);
    assert!(
        message.contains("`path`: 5 is not of type \"string\""),
        "{message}"
    );
    assert!(message.contains("`limit`: \"ten\""), "{message}");
    let message = err(&call(&client, "list_directory", json!({"depth": 0})).await);
    assert!(
        message.contains("`depth`: 0 is less than the minimum of 1"),
        "{message}"
    );
    let message = err(&call(&client, "list_directory", json!({"include_hidden": "yes"})).await);
    assert!(
        message.contains("`include_hidden`") && message.contains("boolean"),
        "{message}"
    );
}

/// The schema says only `minimum: 0` for a `u64`, so `1e20` passes it; the tool's own parse
/// refuses it and names the argument and the range, not serde's Rust type.
#[tokio::test]
async fn an_integer_too_large_for_the_parameter_names_it_and_the_range() {
    let (_d, root) = tempdir();
    std::fs::write(root.join("a.txt"), "a\n").unwrap();
    let client = connect(&root).await;
    let message = err(&call(
        &client,
        "read_file",
        json!({"path": "a.txt", "offset": 1e20}),
    )
    .await);
    assert!(
        message.contains(
            "the arguments for read_file do not fit its parameter types:\n- `offset`: invalid \
             type: floating point `1e+20`, expected an integer from 0 to 18446744073709551615"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn an_extra_argument_is_rejected_with_the_allowed_list() {
    let (_d, root) = tempdir();
    let client = connect(&root).await;
    let message = err(&call(&client, "path_info", json!({"path": "x", "follow": true})).await);
    assert!(message.contains("'follow' was unexpected"), "{message}");
    assert!(
        message.contains("Allowed parameters: path (string, required)."),
        "{message}"
    );
}

#[tokio::test]
async fn an_empty_path_is_explained() {
    let (_d, root) = tempdir();
    let client = connect(&root).await;
    let message = err(&call(&client, "read_file", json!({"path": ""})).await);
    assert!(
        message.contains("the path is empty") && message.contains(&root.display().to_string()),
        "{message}"
    );
}
