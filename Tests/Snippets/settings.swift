// Declarations that README and DocC snippets use without showing them (see
// scripts/check-snippets, which compiles each snippet with this file). Never run.
import Foundation
import Logging
import SecureDictionary

let settings = try! SecureDictionary(name: "settings")
let tokens = try! SecureDictionary(name: "tokens", applicationID: "com.example.app")
let logger = Logger(label: "app")
func showUnlockHint() {}
func showBanner(_ text: String) {}
