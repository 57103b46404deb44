#!/usr/bin/env bash
# Sign Kept.app with the hardened runtime, notarize it and staple the ticket.
#   SIGN_ID="Developer ID Application: ..." NOTARY_PROFILE=kept packaging/macos/notarize.sh build/dist/Kept.app
# NOTARY_PROFILE is a keychain profile made once with `xcrun notarytool store-credentials`.
set -euo pipefail
app="${1:?path to Kept.app}"
here="$(cd "$(dirname "$0")" && pwd)"
: "${SIGN_ID:?set SIGN_ID to the Developer ID Application identity}"
: "${NOTARY_PROFILE:?set NOTARY_PROFILE to a notarytool keychain profile}"
# Inside-out: every Mach-O first, then the bundle.
find "$app/Contents" -type f \( -name '*.so' -o -name '*.dylib' -o -perm -u+x \) -print0 |
  xargs -0 codesign --force --timestamp --options runtime --sign "$SIGN_ID"
codesign --force --timestamp --options runtime --entitlements "$here/entitlements.plist" \
  --sign "$SIGN_ID" "$app"
codesign --verify --deep --strict "$app"
"$app/Contents/MacOS/kept-app" --self-check
zip_path="$(mktemp -d)/Kept.zip"
ditto -c -k --keepParent "$app" "$zip_path"
xcrun notarytool submit "$zip_path" --keychain-profile "$NOTARY_PROFILE" --wait
xcrun stapler staple "$app"
spctl --assess --type execute --verbose "$app"
