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
