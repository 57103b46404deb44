; Inno Setup script for the onedir build (build\dist\kept from packaging\app.spec).
;   iscc packaging\windows\kept.iss
; Installs per user (no admin): the vault lives in the user's profile, whose ACL grants only
; that user (SECURITY.md requirement 22).
#define AppVersion "0.1.0"

[Setup]
AppId={{6B0D3C1E-8F4A-4E8B-9C55-3C1D2A7E4B10}
AppName=Kept
AppVersion={#AppVersion}
AppPublisher=The Kept developers
DefaultDirName={localappdata}\Programs\Kept
DefaultGroupName=Kept
PrivilegesRequired=lowest
OutputBaseFilename=Kept-{#AppVersion}-setup
Compression=lzma2
SolidCompression=yes
WizardStyle=modern
ArchitecturesInstallIn64BitMode=x64compatible

[Files]
Source: "..\..\build\dist\kept\*"; DestDir: "{app}"; Flags: recursesubdirs ignoreversion

[Icons]
Name: "{group}\Kept"; Filename: "{app}\kept-app.exe"
Name: "{userdesktop}\Kept"; Filename: "{app}\kept-app.exe"; Tasks: desktopicon

[Tasks]
Name: "desktopicon"; Description: "Create a desktop shortcut"; Flags: unchecked

[Run]
Filename: "{app}\kept-app.exe"; Description: "Start Kept"; Flags: nowait postinstall skipifsilent
