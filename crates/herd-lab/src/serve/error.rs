//! The API's errors: a status and one line, sent as `{"error": "…"}`.
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use herd_sim::{Field, ScenarioError};
use serde::de::DeserializeOwned;

/// An error answered as JSON `{"error": message}` with its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// One line naming the parameter at fault, when there is one.
    pub message: String,
}

impl ApiError {
    /// 400: a parameter is missing, malformed or out of range.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }

    /// 404: no such route.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
        }
    }

    /// 408: the request's body did not arrive in time (the connection is closed after it).
    pub fn timed_out(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::REQUEST_TIMEOUT,
            message: message.into(),
        }
    }

    /// 503: every simulation slot is taken; the client should come back shortly.
    pub fn busy(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: message.into(),
        }
    }

    /// 500: something failed on our side (a simulation task panicked, say).
    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.into(),
        }
    }
}

/// The page's name for each scenario field a scene's form sets: `(field, parameter)`.
pub(crate) type FormFields = [(Field, &'static str)];

impl ApiError {
    /// 400 for a scenario the simulator refused: named by the page's parameter when the field
    /// at fault is one of the form's (matched by its typed [`Field`], never by spelling), or
    /// as the simulator names it otherwise; 503 for a run stopped by its flag (nobody reads
    /// the answer).
    pub(crate) fn scenario(e: &ScenarioError, form: &FormFields) -> Self {
        if e.is_cancelled() {
            return Self::busy(e.to_string());
        }
        match form.iter().find(|(field, _)| e.is_at(*field)) {
            Some((_, parameter)) => Self::bad_request(format!("{parameter}: {}", e.message())),
            None => Self::bad_request(e.to_string()),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let busy = self.status == StatusCode::SERVICE_UNAVAILABLE;
        let message = herd_sim::shorten_values(&self.message);
        let body = axum::Json(serde_json::json!({ "error": message }));
        let mut response = (self.status, body).into_response();
        if self.status == StatusCode::REQUEST_TIMEOUT {
            // The body was not read to its end: the connection cannot carry another request.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        if busy {
            // A retry library's page should say when to come back.
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

/// `axum::Json`, but a body that is not the expected JSON becomes an [`ApiError`] with axum's
/// explanation (which names the field serde choked on), and a body over the limit a 413.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(from_rejection(&rejection)),
        }
    }
}

fn from_rejection(rejection: &JsonRejection) -> ApiError {
    // axum says 422 for well-formed JSON of the wrong shape; to a caller both are a bad
    // request, and one status is simpler to handle.
    let status = match rejection.status() {
        StatusCode::UNPROCESSABLE_ENTITY => StatusCode::BAD_REQUEST,
        other => other,
    };
    let message = match status {
        StatusCode::PAYLOAD_TOO_LARGE => "request body too large".to_owned(),
        // axum's text starts with a generic sentence; serde's part names the field.
        _ => {
            let text = rejection.body_text();
            match text.split_once("into the target type: ") {
                Some((_, detail)) => detail.to_owned(),
                None => text,
            }
        }
    };
    ApiError { status, message }
}
